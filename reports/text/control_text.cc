#include "reports/text/control_text.h"

#include <sstream>

#include "reports/text/table.h"
#include "reports/text/terminal_safe.h"

namespace fabkit::reports::text {
namespace {

std::string figure(const Json& o, const char* key, const char* fmt) {
  if (!o.is_object() || !o.contains(key) || !o.at(key).is_number()) return "--";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, o.at(key).get<double>());
  return buf;
}

// A string member as the job sent it, made terminal-safe: the reply comes from whatever process
// listens on the socket.
std::string said(const Json& o, const char* key, const char* otherwise) {
  if (!o.is_object() || !o.contains(key) || !o.at(key).is_string()) return otherwise;
  return terminal_safe(o.at(key).get<std::string>());
}

}  // namespace

std::string control_status_line(const Json& st) {
  return "step " + std::to_string(st.value("step", 0LL)) + "/" +
         std::to_string(st.value("total_steps", 0LL)) + "  loss " + figure(st, "loss", "%.4f") +
         "  tokens/s " + figure(st, "tokens_per_s", "%.0f") + "  ETA " + said(st, "eta", "--") +
         "  (" + said(st, "phase", "?") + ", pending " + said(st, "pending", "none") + ")";
}

std::string render_job_list(const Json& jobs) {
  Table t({{"JOB"}, {"STATE"}, {"PID", Align::kRight}, {"OUTPUT"}, {"STATUS"}});
  bool stale = false;
  for (const Json& j : jobs) {
    // Every string here comes from a registration file: shown, never interpreted.
    t.add_row(
        {said(j, "job", ""), said(j, "state", ""), std::to_string(j.value("pid", 0L)),
         said(j, "output_dir", ""),
         j.contains("status") && j["status"].is_object() ? control_status_line(j["status"]) : ""});
    stale = stale || j.value("state", "") == "stale";
  }
  std::ostringstream out;
  t.render(out, "");
  if (stale)
    out << "stale endpoints belong to jobs that are gone: `fabtrain control cleanup` removes "
           "them\n";
  return out.str();
}

}  // namespace fabkit::reports::text
