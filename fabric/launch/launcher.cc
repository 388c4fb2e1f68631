#include "fabric/launch/launcher.h"

#include <cctype>
#include <stdexcept>

#include "common/errors.h"

namespace fabkit::launch {

const char* to_string(LauncherKind k) {
  switch (k) {
    case LauncherKind::kSsh: return "ssh";
    case LauncherKind::kSrun: return "srun";
    case LauncherKind::kTemplate: return "template";
  }
  return "unknown";
}

std::vector<std::string> split_template(const std::string& text) {
  static const std::string kShellChars = "'\"`$;&|<>()\\*?~!#\n\r";
  std::vector<std::string> words;
  std::string cur;
  for (char c : text) {
    if (kShellChars.find(c) != std::string::npos) {
      std::string shown = c == '\n' ? "\\n" : c == '\r' ? "\\r" : std::string(1, c);
      throw UsageError("--launcher '" + text + "': the character '" + shown +
                       "' needs a shell, and fabcheck runs launchers without one; write the "
                       "command as plain words, e.g. --launcher 'ip netns exec {host}', or wrap "
                       "it in a script and give --launcher '/path/to/script {host}'");
    }
    if (c == ' ' || c == '\t') {
      if (!cur.empty()) words.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

LauncherSpec parse_launcher(const std::string& text, int connect_timeout_s) {
  LauncherSpec s;
  s.connect_timeout_s = connect_timeout_s;
  if (text.empty() || text == "ssh") return s;
  if (text == "srun") {
    s.kind = LauncherKind::kSrun;
    return s;
  }
  s.kind = LauncherKind::kTemplate;
  s.template_argv = split_template(text);
  bool has_host = false;
  for (const auto& w : s.template_argv) has_host = has_host || w.find("{host}") != std::string::npos;
  if (s.template_argv.empty() || !has_host)
    throw UsageError("--launcher '" + text + "': give ssh, srun, or a command template holding "
                     "{host}, e.g. 'ip netns exec {host}' or 'docker exec -i {host}'");
  for (const auto& w : s.template_argv)
    if (w.find('{') != std::string::npos && w.find('{') != w.find("{host}"))
      throw UsageError("--launcher '" + text + "': unknown placeholder in '" + w +
                       "'; only {host} is substituted");
  return s;
}

void check_host_name(const std::string& host) {
  bool ok = !host.empty() && host.size() <= 253 && host[0] != '-';
  for (char c : host)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ||
                c == ':');
  if (!ok)
    throw UsageError("host '" + host + "': use a host name, an IP address or a namespace/container "
                     "name made of letters, digits, '.', '-', '_' (not starting with '-')");
}

void check_shell_inert(const std::string& word, const char* what) {
  for (char c : word) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || std::string("/._-=+,:@%").find(c) != std::string::npos;
    if (!ok)
      throw UsageError(std::string(what) + " '" + word + "' holds the character '" +
                       std::string(1, c) + "', which a remote shell would interpret; install "
                       "fabcheck under a plain path (letters, digits, / . _ -) and pass --agent-path");
  }
}

std::vector<std::string> launcher_argv(const LauncherSpec& spec, const std::string& host,
                                       const std::vector<std::string>& agent_argv) {
  check_host_name(host);
  std::vector<std::string> argv;
  switch (spec.kind) {
    case LauncherKind::kSsh:
      for (const auto& w : agent_argv) check_shell_inert(w, "agent command word");
      // BatchMode: never prompt for a password (a prompt would hang the run); ConnectTimeout:
      // an unreachable host fails within the run's budget.
      argv = {"ssh", "-o", "BatchMode=yes", "-o",
              "ConnectTimeout=" + std::to_string(spec.connect_timeout_s), "--", host};
      break;
    case LauncherKind::kSrun:
      // --quiet: srun's own job-step chatter would otherwise mix with the agent's stderr.
      argv = {"srun", "-w", host, "-N1", "-n1", "--quiet"};
      break;
    case LauncherKind::kTemplate:
      for (const auto& w : spec.template_argv) {
        std::string out = w;
        for (size_t p; (p = out.find("{host}")) != std::string::npos;) out.replace(p, 6, host);
        argv.push_back(out);
      }
      break;
  }
  for (const auto& w : agent_argv)
    // ssh joins its remote words with spaces for the remote shell, where an empty word would
    // vanish and shift every later argument: it goes as '' (an empty word in sh, bash, zsh, csh).
    argv.push_back(spec.kind == LauncherKind::kSsh && w.empty() ? "''" : w);
  return argv;
}

std::vector<std::string> launcher_sh_argv(const LauncherSpec& spec, const std::string& host,
                                          const std::string& script, const std::string& name,
                                          const std::vector<std::string>& args) {
  if (script.find_first_of("'!\n") != std::string::npos)
    throw std::invalid_argument("launcher_sh_argv: the script holds ', ! or a newline");
  for (const auto& w : args) check_shell_inert(w, "agent command word");
  check_shell_inert(name, "agent command word");
  // ssh joins its remote words into one string for the login shell: the script goes quoted.
  const std::string program = spec.kind == LauncherKind::kSsh ? "'" + script + "'" : script;
  std::vector<std::string> words = {"sh", "-c", "PROGRAM", name};
  words.insert(words.end(), args.begin(), args.end());
  auto argv = launcher_argv(spec, host, words);
  argv[argv.size() - args.size() - 2] = program;
  return argv;
}

}  // namespace fabkit::launch
