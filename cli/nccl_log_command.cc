// fabcheck nccl-log FILE...: which network NCCL really used and what went wrong, from an
// NCCL_DEBUG=INFO log or a failed job's output; several files (one per rank or node) are read as
// one job, and the first failure across them is named.
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
  std::vector<std::string> files;
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
  std::vector<nccl_log::NcclLogInput> inputs;
  std::uintmax_t total = 0;
  bool stdin_read = false;
  for (const auto& f : a.files) {
    if (f == "-") {
      if (stdin_read) throw UsageError("nccl-log: '-' (standard input) given twice");
      stdin_read = true;
    }
    std::string text = f == "-" ? read_log(std::cin, "standard input") : read_log_file(f);
    total += text.size();
    // One limit for the whole job, so many files cannot add up to what one may not be.
    if (total > kMaxLogBytes) throw UsageError(too_large(f + " (with the files before it)"));
    inputs.push_back({a.files.size() > 1 ? f : std::string(), std::move(text)});
  }
  std::optional<std::string> expect;
  if (!a.expect.empty()) expect = a.expect;
  nccl_log::NcclLogSummary s = inputs.size() == 1 ? nccl_log::parse_nccl_log(inputs[0].text)
                                                  : nccl_log::parse_nccl_logs(inputs);
  Report r = new_report("nccl-log");
  r.findings = nccl_log::judge_nccl_log(s, expect);
  Json facts = nccl_log::to_json(s);
  facts["file"] = a.files.front();
  facts["files"] = a.files;
  r.sections.push_back({"nccl_log", facts});
  return reports::render_report(r, a.json, std::cout);
}

}  // namespace

void register_nccl_log_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<NcclLogArgs>();
  auto* sub = app.add_subcommand("nccl-log",
                                 "Read an NCCL_DEBUG=INFO log or a failed job's output: "
                                 "network really used (IB, RoCE, Socket, plugin), "
                                 "GPUDirect, the failure and who said it first");
  sub->add_option("FILE", args->files,
                  "The log, or one log per rank/node of the same job ('-' reads standard input)")
      ->required();
  sub->add_flag("--json", args->json, "Print the report as JSON (docs/json/net.md)");
  sub->add_option("--expect", args->expect,
                  "The network the job should have used: IB, RoCE, Socket or a plugin name");
  sub->callback([args, exit_code] {
    *exit_code = run_command("nccl-log", args->json, [&] { return run_nccl_log(*args); });
  });
}

}  // namespace fabkit::cli
