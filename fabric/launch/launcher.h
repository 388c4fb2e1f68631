// How the controller starts `fabcheck agent` on a host: ssh (default), srun inside an allocation,
// or a template such as 'ip netns exec {host}' / 'docker exec -i {host}'. Everything becomes an
// argv vector for posix_spawn — no shell on this side, so a host name or template cannot smuggle
// in a command. (ssh itself joins the remote argv into a string for the remote shell, which is why
// host names and the agent path are restricted to shell-inert characters.)
#pragma once

#include <string>
#include <vector>

namespace fabkit::launch {

enum class LauncherKind { kSsh, kSrun, kTemplate };

struct LauncherSpec {
  LauncherKind kind = LauncherKind::kSsh;
  std::vector<std::string> template_argv;  // kTemplate: words, some holding "{host}"
  int connect_timeout_s = 10;              // ssh -o ConnectTimeout
};

// "ssh" | "srun" | a template holding {host}. Throws UsageError naming the offending character
// or word and the fix (templates needing quotes, pipes, variables or globbing need a shell).
LauncherSpec parse_launcher(const std::string& text, int connect_timeout_s);

// Splits on spaces and tabs; rejects shell syntax ( ' " ` $ ; & | < > ( ) \ * ? ~ and newlines).
std::vector<std::string> split_template(const std::string& text);

// Host names: letters, digits, '.', '-', '_' and ':' (IPv6 literal), not starting with '-' (which
// ssh or srun would read as an option). Throws UsageError.
void check_host_name(const std::string& host);
// The agent command words (path + flags) must be shell-inert for ssh. Throws UsageError.
void check_shell_inert(const std::string& word, const char* what);

std::vector<std::string> launcher_argv(const LauncherSpec& spec, const std::string& host,
                                       const std::vector<std::string>& agent_argv);
// `sh -c SCRIPT $0 ARGS...` on host: the script is fabcheck's own (ship.h), one line without
// single quotes or '!', so ssh's remote shell (sh, bash, zsh or csh) receives it single-quoted;
// the args are checked shell-inert as agent words are.
std::vector<std::string> launcher_sh_argv(const LauncherSpec& spec, const std::string& host,
                                          const std::string& script, const std::string& name,
                                          const std::vector<std::string>& args);

const char* to_string(LauncherKind k);

}  // namespace fabkit::launch
