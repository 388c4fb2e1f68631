// fabcheck nccl-log FILE...: which network NCCL really used and what went wrong, from an
// NCCL_DEBUG=INFO log or a failed job's output; several files (one per rank or node) are read as
// one job, and the first failure across them is named.
#include <iostream>
#include <string_view>

#include "cli/command.h"
#include "common/errors.h"
#include "common/input_file.h"
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

// One limit for all the files and standard input together, enforced while reading: a pipe that
// never ends (or a file still growing) is refused at the limit. The logs are parsed as they are
// read (NcclLogReader), never held whole.
constexpr const char* kFix =
    "give the log a job wrote with NCCL_DEBUG=INFO ('-' reads standard input); of a longer log, "
    "the part around NCCL's initialisation (grep -n 'NCCL INFO' LOG | head -n 2000 > part.log)";

int run_nccl_log(const NcclLogArgs& a) {
  nccl_log::NcclLogReader reader;
  std::uintmax_t total = 0;
  bool stdin_read = false;
  for (const auto& f : a.files) {
    if (f == "-") {
      if (stdin_read) throw UsageError("nccl-log: '-' (standard input) given twice");
      stdin_read = true;
    }
    reader.begin(a.files.size() > 1 ? f : std::string());
    total += read_input_pieces(f, {"nccl-log", kMaxLogBytes, kFix, true, total},
                               [&](std::string_view piece) { reader.feed(piece); });
  }
  std::optional<std::string> expect;
  if (!a.expect.empty()) expect = a.expect;
  nccl_log::NcclLogSummary s = reader.finish();
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
