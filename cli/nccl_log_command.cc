// fabcheck nccl-log FILE: which network NCCL really used (and what went wrong), from an
// NCCL_DEBUG=INFO log.
#include <filesystem>
#include <fstream>
#include <iostream>
#include "cli/command.h"
#include "common/errors.h"
#include "common/file_reader.h"
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

// One limit for a file and for standard input, enforced while reading: a pipe that never ends
// (or a file still growing) is refused at the limit, never slurped whole first.
std::string too_large(const std::string& name) {
  return "nccl-log " + name + ": more than " + std::to_string(kMaxLogBytes >> 20) +
         " MiB; cut the part around NCCL's initialisation (grep -n 'NCCL INFO' LOG | head -n 2000 "
         "> part.log) and give that";
}

std::string read_log(std::istream& in, const std::string& name) {
  std::string text;
  try {
    if (!read_stream_capped(in, kMaxLogBytes, &text, name)) throw UsageError(too_large(name));
  } catch (const SysErrorException& e) {
    throw UsageError("nccl-log " + name + ": " + e.what());
  }
  return text;
}

std::string read_log_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw UsageError("nccl-log " + path + ": not a readable file; give the log a job wrote with "
                     "NCCL_DEBUG=INFO (or '-' for standard input)");
  // Refused without reading when the size already says so; read_log enforces it for the rest.
  if (std::filesystem::file_size(path, ec) > kMaxLogBytes) throw UsageError(too_large(path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("nccl-log " + path + ": cannot open for reading");
  return read_log(in, path);
}

int run_nccl_log(const NcclLogArgs& a) {
  std::string text;
  if (a.file == "-")
    text = read_log(std::cin, "standard input");
  else
    text = read_log_file(a.file);
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
