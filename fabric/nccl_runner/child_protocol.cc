#include "fabric/nccl_runner/child_protocol.h"

#include <cctype>

namespace fabkit::fabric {
namespace {
ChildLine invalid(const std::string& why) { return {ChildLineKind::kInvalid, "", why}; }
}  // namespace

bool is_unique_id_hex(const std::string& s) {
  if (s.size() != 2 * kUniqueIdBytes) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

ChildLine parse_child_line(const std::string& raw) {
  std::string line = raw;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  size_t sp = line.find(' ');
  std::string head = line.substr(0, sp);
  std::string rest = sp == std::string::npos ? "" : line.substr(sp + 1);
  if (head == "READY" || head == "GO") {
    bool any = head == "READY" && rest == "-";
    if (!any && !is_unique_id_hex(rest)) return invalid(head + " needs a 256-digit hex unique id" + (head == "READY" ? " or '-'" : ""));
    return {head == "READY" ? ChildLineKind::kReady : ChildLineKind::kGo, rest, ""};
  }
  if (head == "STOP") return {ChildLineKind::kStop, "", ""};
  if (head == "UNAVAILABLE") return {ChildLineKind::kUnavailable, "", rest.empty() ? "no reason given" : rest};
  if (head == "FAILED") {
    size_t sp2 = rest.find(' ');
    if (rest.empty()) return invalid("FAILED needs a kind");
    return {ChildLineKind::kFailed, rest.substr(0, sp2), sp2 == std::string::npos ? "" : rest.substr(sp2 + 1)};
  }
  if (head == "PROGRESS") {
    if (rest.empty() || rest.find_first_not_of("0123456789") != std::string::npos) return invalid("PROGRESS needs a byte count");
    return {ChildLineKind::kProgress, rest, ""};
  }
  if (head == "RESULT") {
    if (rest.empty() || rest.front() != '{') return invalid("RESULT needs a JSON object");
    return {ChildLineKind::kResult, "", rest};
  }
  return invalid("unknown line '" + line.substr(0, 40) + "'");
}

}  // namespace fabkit::fabric
