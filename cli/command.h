// Shared plumbing for subcommands: one file per subcommand binds its options into a struct and
// calls the library; this maps what escapes to the documented exit codes (docs/architecture.md:
// 0 clean, 1 findings, 2 usage error, 3 internal error).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/output_file.h"
#include "common/report.h"
#include "probes/probe_context.h"

namespace fabkit::cli {

// Runs fn. UsageError -> 2, SysErrorException/InternalError/std::exception -> 3; the message goes
// to stderr as text, or to stdout as a JSON error document when json is set.
int run_command(const std::string& kind, bool json, const std::function<int()>& fn);

// Writes text to stdout when out is empty or "-", else to the file through write_output_file
// (common/output_file.h: atomic; a failure is a usage error naming flag and path). Files named by
// other flags (--html, --prom) go to write_output_file directly; every command checks its output
// paths with check_output_path before it starts work.
void write_output(const std::string& flag, const std::string& out, const std::string& text);
void check_stdout_or_path(const std::string& flag, const std::string& out);

// The probe context of every command that looks at a node: this process's environment and the
// live system, or a captured tree under --sysroot DIR (which must be a directory). Throws
// UsageError naming --sysroot.
ProbeContext node_probe_context(const std::string& sysroot);

// This binary's own path (/proc/self/exe): the agent the controller starts on every host unless
// --agent-path says otherwise.
std::string self_path();

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
