// Fuzzes the tokenizer.json reader and, for documents it accepts, the tokenizer they make
// (trainer/tokenizer/hf_tokenizer*.h): any input must be rejected with UsageError or give a
// tokenizer whose encode of a fixed mixed-script text returns ids that decode without error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "common/json_read.h"
#include "trainer/tokenizer/hf_tokenizer.h"
#include "trainer/tokenizer/hf_tokenizer_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabkit::trainer;
  nlohmann::json doc;
  try {
    doc = fabkit::parse_json_sorted(std::string_view(reinterpret_cast<const char*>(data), size),
                                    "fuzz.json");
  } catch (const fabkit::JsonReadError&) {
    return 0;
  }
  try {
    HfTokenizer tok(parse_tokenizer_json(doc, "fuzz.json"), "fuzz.json", SpecialTokenHints{});
    const auto ids = tok.encode("Hello, world! café 東京 🙂 12345 \n\n  it's <|x|>");
    (void)tok.decode(ids);
    (void)tok.encode_with_template("x");
  } catch (const fabkit::UsageError&) {
  }
  return 0;
}
