// Any text as an NCCL log: parse, judge, serialise. Invariants: no crash; error line numbers lie
// within the log; JSON serialisation succeeds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fabric/nccl_log/nccl_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabkit::nccl_log;
  std::string text(reinterpret_cast<const char*>(data), size);
  NcclLogSummary s = parse_nccl_log(text);
  for (const auto& e : s.errors)
    if (e.line < 1 || e.line > s.lines) std::abort();
  judge_nccl_log(s, std::string("IB"));
  judge_nccl_log(s, std::nullopt);
  to_json(s).dump();
  return 0;
}
