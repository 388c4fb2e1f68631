// Any text as an NCCL log: parse, judge, serialise, render. Invariants: no crash; error line
// numbers lie within the log; every failure points at an error of its kind; the cause is one of
// the failures; JSON serialisation succeeds. The input is also read as two files of one job (split
// at its first NUL byte), the multi-rank path.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fabric/nccl_log/nccl_log.h"

namespace {

void check(const fabkit::nccl_log::NcclLogSummary& s) {
  using namespace fabkit::nccl_log;
  for (const auto& e : s.errors)
    if (e.line < 1 || e.line > s.lines) std::abort();
  bool cause_found = !s.cause_kind;
  for (const auto& f : s.failures) {
    if (f.first_error >= s.errors.size() || s.errors[f.first_error].kind != f.kind) std::abort();
    if (f.count < 1) std::abort();
    cause_found = cause_found || f.kind == *s.cause_kind;
  }
  if (!cause_found) std::abort();
  judge_nccl_log(s, std::string("IB"));
  judge_nccl_log(s, std::nullopt);
  to_json(s).dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabkit::nccl_log;
  std::string text(reinterpret_cast<const char*>(data), size);
  check(parse_nccl_log(text));
  const size_t nul = text.find('\0');
  if (nul != std::string::npos)
    check(parse_nccl_logs({{"a.log", text.substr(0, nul)}, {"b.log", text.substr(nul + 1)}}));
  return 0;
}
