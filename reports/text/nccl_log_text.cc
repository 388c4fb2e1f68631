// Text of the `nccl_log` section: the network line, then each failure explained (what it means,
// its likely causes in order, the fix, who said it first) with the others marked as
// consequences, then the per-rank view. Shared by `fabcheck nccl-log` and fabtrain.
#include "reports/text/nccl_log_text.h"

#include "reports/text/table.h"
#include "reports/text/terminal_safe.h"
#include "reports/text/text_parts.h"

namespace fabkit::reports::text {
namespace {

constexpr size_t kMaxRankRows = 32;

std::string where(const Json& e) {
  const std::string source = str(member(e, "source"), "");
  const Json& line = member(e, "line");
  return (source.empty() ? "" : source + ":") + "line " + (line.is_number() ? line.dump() : "?");
}

std::string said_first(const Json& e) {
  std::string who = str(member(e, "who"), "");
  std::string s = (who.empty() ? std::string("the log") : who) + " at " + where(e);
  const std::string peer = str(member(e, "peer"), "");
  if (!peer.empty()) s += ", peer " + peer;
  const std::string detail = str(member(e, "detail"), "");
  if (!detail.empty()) s += ", " + detail;
  return s;
}

void render_failure(const Json& f, std::ostream& out, const Style& style) {
  const Json& first = member(f, "first");
  const std::string role = str(member(f, "role"), "");
  out << "  " << style.bad(str(member(f, "kind"))) << " — " << str(member(f, "title")) << " ("
      << (role == "condition" ? "a condition, not a failure by itself" : "the cause") << ")\n";
  out << "    what it means: " << str(member(f, "meaning")) << "\n";
  out << "    said first by: " << said_first(first) << "\n";
  out << "                   \"" << str(member(first, "text")) << "\"\n";
  const Json& said = member(f, "said_by");
  const Json& count = member(f, "count");
  if (said.is_array() && said.size() > 1)
    out << "    also said by:  " << said.size() - 1 << " other rank(s)/process(es) ("
        << (count.is_number() ? count.dump() : "?") << " lines in all)\n";
  out << "    likely causes, most likely first:\n";
  int i = 0;
  const Json& causes = member(f, "causes");
  if (causes.is_array())
    for (const auto& c : causes) out << "      " << ++i << ". " << str(c) << "\n";
  out << "    fix: " << str(member(f, "fix")) << "\n";
}

}  // namespace

void render_nccl_log_section(const Json& log, std::ostream& out, const Style& style) {
  const std::string net = str(member(log, "network"), "");
  out << "NCCL log: network " << (net.empty() ? "unknown" : net);
  const std::string evidence = str(member(log, "network_evidence"), "");
  if (!evidence.empty()) out << " (" << evidence << ")";
  const std::string version = str(member(log, "version"), "");
  if (!version.empty()) out << ", NCCL " << version;
  const Json& ranks = member(log, "ranks");
  if (ranks.is_array() && !ranks.empty()) out << ", " << ranks.size() << " rank(s)/process(es)";
  out << "\n";
  // IB async events before the failure: benign ones (a subnet manager's reregistration) explain
  // a log that shows no failure as well as one that does.
  const Json& events = member(log, "ib_events");
  if (events.is_array() && !events.empty()) {
    out << "IB async events:\n";
    for (const auto& e : events) {
      const std::string device = str(member(e, "device"), "");
      const Json& count = member(e, "count");
      const bool benign = member(e, "benign") == true;
      out << "  " << (benign ? str(member(e, "event")) : style.bad(str(member(e, "event"))))
          << (device.empty() ? "" : " on " + device) << " x"
          << (count.is_number() ? count.dump() : "?") << " — "
          << (benign ? "benign: " : "not benign: ") << str(member(e, "meaning")) << "\n";
    }
  }
  const Json& failures = member(log, "failures");
  if (!failures.is_array() || failures.empty()) {
    out << "failure: none named (no NCCL or PyTorch-NCCL error line)\n";
    return;
  }
  const Json& lead = failures.front();
  out << "\nfailure"
      << (member(log, "order_by_time") == true ? " (first in time across ranks)"
                                               : " (first in the log)")
      << "\n";
  render_failure(lead, out, style);
  if (failures.size() > 1) {
    out << "\n"
        << (str(member(lead, "role"), "") == "condition"
                ? "also in the log"
                : "consequences of " + str(member(lead, "kind")) +
                      " (what it did to the other ranks)")
        << "\n";
    Table t({{"kind"}, {"role"}, {"lines", Align::kRight}, {"first said by"}, {"text"}});
    for (size_t i = 1; i < failures.size(); ++i) {
      const Json& f = failures[i];
      const Json& count = member(f, "count");
      std::string text = str(member(member(f, "first"), "text"));
      if (text.size() > 100) text = text.substr(0, 97) + "...";
      t.add_row({str(member(f, "kind")), str(member(f, "role")),
                 count.is_number() ? count.dump() : "-", said_first(member(f, "first")), text});
    }
    t.render(out);
  }
  if (ranks.is_array() && ranks.size() > 1) {
    out << "\nper rank/process" << (ranks.size() > kMaxRankRows ? " (those with errors first)" : "")
        << "\n";
    Table t({{"who"},
             {"lines", Align::kRight},
             {"network"},
             {"errors", Align::kRight},
             {"first error"}});
    size_t shown = 0;
    for (int pass = 0; pass < 2 && shown < kMaxRankRows; ++pass)
      for (const auto& r : ranks) {
        const Json& errors = member(r, "errors");
        const bool with_errors = errors.is_number() && errors.get<int>() > 0;
        if ((pass == 0) != with_errors || shown >= kMaxRankRows) continue;
        const Json& line = member(r, "first_error_line");
        t.add_row({str(member(r, "who")), fixed(member(r, "lines"), 0), str(member(r, "network")),
                   fixed(errors, 0),
                   with_errors ? str(member(r, "first_error_kind")) + " (line " +
                                     (line.is_number() ? line.dump() : "?") + ")"
                               : "-"});
        ++shown;
      }
    t.render(out);
    if (ranks.size() > shown) out << "  ... " << ranks.size() - shown << " more\n";
  }
}

}  // namespace fabkit::reports::text
