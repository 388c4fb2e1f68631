#include "slurm/health.h"

namespace fabkit::slurm {
namespace {

std::string one_line(const std::string& s) {
  std::string out;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    // scontrol takes the reason as one argv word, but sinfo and scripts print it in quotes.
    out += (u < 0x20 || u == 0x7f || c == '"' || c == '\'' || c == '\\') ? ' ' : c;
  }
  return out;
}

}  // namespace

HealthDecision decide_health(const Report& r, const std::string& node) {
  HealthDecision d;
  d.node = node;
  const Finding* first = nullptr;
  int fails = 0;
  for (const auto& f : r.findings)
    if (f.severity == Severity::kFail) {
      if (!first) first = &f;
      ++fails;
    }
  if (!first) return d;
  d.drain = true;
  std::string more = fails > 1 ? " (+" + std::to_string(fails - 1) + " more)" : "";
  std::string head = one_line("fabcheck: " + first->code + " " + first->subject);
  if (head.size() + more.size() > kMaxReasonChars)
    head = head.substr(0, kMaxReasonChars - more.size() - 3) + "...";
  d.reason = head + more;
  d.scontrol_argv = {"scontrol", "update", "NodeName=" + node, "State=DRAIN", "Reason=" + d.reason};
  return d;
}

std::string health_line(const HealthDecision& d, const Report& r, bool dry_run) {
  int fail = 0, warn = 0;
  for (const auto& f : r.findings) {
    if (f.severity == Severity::kFail) ++fail;
    if (f.severity == Severity::kWarn) ++warn;
  }
  if (!d.drain)
    return "fabcheck health: " + d.node + " ok (" + std::to_string(fail) + " fail, " +
           std::to_string(warn) + " warn)";
  return "fabcheck health: " + d.node + " drain: " + d.reason +
         (dry_run ? " (dry run: not drained)" : "");
}

}  // namespace fabkit::slurm
