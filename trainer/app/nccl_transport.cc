#include "trainer/app/nccl_transport.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fabric/nccl_log/nccl_log.h"
#include "reports/text/nccl_log_text.h"
#include "trainer/app/fabric_setup.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : fallback;
}

// NCCL_DEBUG_FILE's own substitutions: %h the host name, %p the process id.
std::string expand_nccl_pattern(const std::string& pattern) {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() &&
        (pattern[i + 1] == 'h' || pattern[i + 1] == 'p')) {
      out += pattern[i + 1] == 'h' ? std::string(host) : std::to_string(getpid());
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

bool at_least_info(const std::string& level) {
  std::string l;
  for (char c : level) l += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return l == "INFO" || l == "TRACE";
}

}  // namespace

NcclLogPlan prepare_nccl_log(const std::string& output_dir, int rank, bool transport_required) {
  NcclLogPlan plan;
  const std::string level = env_or("NCCL_DEBUG", "");
  if (!at_least_info(level)) {
    if (!level.empty() && !transport_required) {
      plan.adjustments =
          "NCCL_DEBUG=" + level + " kept (below INFO): the network NCCL uses is not verified";
      return plan;
    }
    setenv("NCCL_DEBUG", "INFO", 1);
    plan.adjustments = "NCCL_DEBUG=INFO";
    // Only the subsystems that name the network, so the log stays a few dozen lines.
    if (!std::getenv("NCCL_DEBUG_SUBSYS")) {
      setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
      plan.adjustments += " NCCL_DEBUG_SUBSYS=INIT,NET";
    }
  }
  if (const char* user_file = std::getenv("NCCL_DEBUG_FILE")) {
    plan.file = expand_nccl_pattern(user_file);
  } else {
    const fs::path dir = fs::path(output_dir) / "nccl";
    fs::create_directories(dir);
    plan.file = (dir / ("rank-" + std::to_string(rank) + ".log")).string();
    // A resumed job appends to an older run's file: start it afresh, this run's lines only.
    fs::remove(plan.file);
    setenv("NCCL_DEBUG_FILE", plan.file.c_str(), 1);
    plan.adjustments +=
        (plan.adjustments.empty() ? "" : " ") + std::string("NCCL_DEBUG_FILE=") + plan.file;
  }
  return plan;
}

std::string explain_nccl_log(const std::string& log_text, const std::string& file) {
  const nccl_log::NcclLogSummary s = nccl_log::parse_nccl_log(log_text);
  if (s.failures.empty()) return "";
  std::ostringstream out;
  out << "NCCL's log " << file << " explains the failure (this rank's view; run `fabcheck "
      << "nccl-log` on every rank's log to find the rank that failed first):\n";
  Json facts = nccl_log::to_json(s);
  reports::text::render_nccl_log_section(facts, out, reports::text::Style{});
  return out.str();
}

std::string explain_nccl_failure(const NcclLogPlan& plan) {
  if (plan.file.empty()) return "";
  std::ifstream in(plan.file, std::ios::binary);
  if (!in) return "";
  // NCCL's own log of one rank: INFO lines of init and the errors, far below this cap; a larger
  // file is read up to it (its end, where the failure is, matters most: keep the tail).
  constexpr std::streamoff kMaxBytes = 64 << 20;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(size > kMaxBytes ? size - kMaxBytes : 0);
  std::stringstream text;
  text << in.rdbuf();
  return explain_nccl_log(text.str(), plan.file);
}

std::string transport_mismatch(const std::string& log_text,
                               const std::optional<std::string>& required,
                               std::string* summary_line) {
  const nccl_log::NcclLogSummary s = nccl_log::parse_nccl_log(log_text);
  std::string line = "NCCL " + s.version.value_or("(version not in the log)") + " network " +
                     s.network.value_or("unknown") +
                     (s.network_evidence ? " (" + *s.network_evidence + ")" : std::string());
  if (!s.hcas.empty()) {
    line += ", HCAs";
    for (const auto& h : s.hcas) line += " " + h;
  }
  if (s.gdr) line += *s.gdr ? ", GPUDirect RDMA" : ", no GPUDirect RDMA";
  if (summary_line) *summary_line = line;
  if (!required) return "";
  if (!s.network) {
    return "NCCL's log does not say which network it used (" + std::to_string(s.lines) +
           " lines): cannot confirm " + *required;
  }
  std::string why;
  for (const auto& f : nccl_log::judge_nccl_log(s, *required)) {
    if (f.code == "nccl_log.unexpected_network") why = f.message;
  }
  if (why.empty()) return "";
  for (const auto& f : nccl_log::judge_nccl_log(s, *required)) {
    if (f.severity >= Severity::kWarn && f.code != "nccl_log.unexpected_network")
      why += "; " + f.message;
  }
  return why;
}

void check_nccl_transport(const NcclLogPlan& plan, const std::optional<std::string>& required,
                          Comm& comm, const TrainLog& log) {
  std::string mismatch;
  if (plan.file.empty()) {
    log.info(plan.adjustments);
  } else {
    std::ifstream in(plan.file);
    std::stringstream text;
    if (in) text << in.rdbuf();
    std::string summary;
    if (!in) {
      mismatch =
          required ? "NCCL wrote no log to " + plan.file + ": cannot confirm " + *required : "";
      log.warn("no NCCL log at " + plan.file + ": the network NCCL uses is not verified");
    } else {
      mismatch = transport_mismatch(text.str(), required, &summary);
      log.info(summary + " [log " + plan.file + "]");
    }
    if (!mismatch.empty()) log.warn("--require-transport " + *required + ": " + mismatch);
  }
  if (!required) return;
  // Every rank learns whether any rank failed the check, so all leave together.
  double bad = mismatch.empty() ? 0.0 : 1.0;
  comm.allreduce_sum(&bad, 1);
  if (bad > 0) {
    throw ValidationRefused(
        "--require-transport " + *required + ": NCCL did not use it on " +
        std::to_string(static_cast<int>(bad)) + " rank(s)" +
        (mismatch.empty() ? std::string(" (see their warnings)") : ": " + mismatch) +
        " -- run `fabcheck node` on the nodes and `fabcheck nccl-log " +
        (plan.file.empty() ? std::string("<log>") : plan.file) +
        "` for the cause and the fix; the job stops before training");
  }
  log.info("--require-transport " + *required + ": confirmed on every rank");
}

}  // namespace fabkit::trainer
