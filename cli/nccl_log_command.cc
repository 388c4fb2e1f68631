// fabcheck nccl-log FILE: which network NCCL really used (and what went wrong), from an
// NCCL_DEBUG=INFO log.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include "cli/command.h"
#include "common/errors.h"
#include "common/report.h"
#include "fabric/nccl_log/nccl_log.h"
#include "reports/report_render.h"

namespace fabkit::cli {
namespace {

constexpr std::uintmax_t kMaxLogBytes = 512ull << 20;  // a month of INFO logs is far less

struct NcclLogArgs {
  bool json = false;
  std::string file;
  std::string expect;
};

std::string read_log(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw UsageError("nccl-log " + path + ": not a readable file; give the log a job wrote with "
                     "NCCL_DEBUG=INFO (or '-' for standard input)");
  if (std::filesystem::file_size(path, ec) > kMaxLogBytes)
    throw UsageError("nccl-log " + path + ": larger than 512 MiB; cut the part around NCCL's "
                     "initialisation (grep -n 'NCCL INFO' ...)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("nccl-log " + path + ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run_nccl_log(const NcclLogArgs& a) {
  std::string text;
  if (a.file == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  } else {
    text = read_log(a.file);
  }
  std::optional<std::string> expect;
  if (!a.expect.empty()) expect = a.expect;
  nccl_log::NcclLogSummary s = nccl_log::parse_nccl_log(text);
  Report r = new_report("nccl-log");
  r.findings = nccl_log::judge_nccl_log(s, expect);
  Json facts = nccl_log::to_json(s);
  facts["file"] = a.file;
  r.sections.push_back({"nccl_log", facts});
  return reports::render_report(r, a.json, std::cout);
}

}  // namespace

void register_nccl_log_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<NcclLogArgs>();
  auto* sub = app.add_subcommand("nccl-log", "Read an NCCL_DEBUG=INFO log: network really used "
                                             "(IB, RoCE, Socket, plugin), GPUDirect, errors");
  sub->add_option("FILE", args->file, "The log ('-' reads standard input)")->required();
  sub->add_flag("--json", args->json, "Print the report as JSON (docs/json/net.md)");
  sub->add_option("--expect", args->expect,
                  "The network the job should have used: IB, RoCE, Socket or a plugin name");
  sub->callback([args, exit_code] {
    *exit_code = run_command("nccl-log", args->json, [&] { return run_nccl_log(*args); });
  });
}

}  // namespace fabkit::cli
