// Shared plumbing for subcommands: one file per subcommand binds its options into a struct and
// calls the library; this maps what escapes to the documented exit codes (STYLE.md §3).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/report.h"
#include "probes/probe_context.h"

namespace fabkit::cli {

// Runs fn. UsageError -> 2, SysErrorException/InternalError/std::exception -> 3; the message goes
// to stderr as text, or to stdout as a JSON error document when json is set.
int run_command(const std::string& kind, bool json, const std::function<int()>& fn);

// Writes text to stdout when out is empty or "-", else to the file out via a temp file + rename,
// so an error never leaves a partial file.
void write_output(const std::string& out, const std::string& text);
// Writes text to the file a flag named (--html, --prom) atomically; a missing directory is a
// usage error naming the flag and the path. check_output_path is that check alone, for commands
// that must refuse before a long measurement or before writing a first file of several.
void check_output_path(const std::string& flag, const std::string& path);
void write_file_output(const std::string& flag, const std::string& path, const std::string& text);

// "a,b,,c" -> {a, b, c}: the items of a comma-separated flag value, empty items dropped.
std::vector<std::string> comma_list(const std::string& text);

// Every subcommand registers itself on the app and stores its exit code in *exit_code.
void register_node_command(CLI::App& app, int* exit_code);
void register_topo_command(CLI::App& app, int* exit_code);      // [topo]
void register_nccl_log_command(CLI::App& app, int* exit_code);  // [nccl-log]
void register_profile_command(CLI::App& app, int* exit_code);   // [profile]
void register_emit_env_command(CLI::App& app, int* exit_code);  // [profile]
void register_validate_command(CLI::App& app, int* exit_code);  // [profile]
void register_pair_command(CLI::App& app, int* exit_code);      // [pair]
void register_agent_command(CLI::App& app, int* exit_code);     // [pair]
void register_cluster_command(CLI::App& app, int* exit_code);   // [cluster]
void register_report_command(CLI::App& app, int* exit_code);    // [report]

}  // namespace fabkit::cli
