#include "cli/command.h"

#include <filesystem>
#include <iostream>

#include "common/errors.h"
#include "common/file_reader.h"
#include "common/report.h"
#include "reports/report_render.h"

namespace fabkit::cli {

int run_command(const std::string& kind, bool json, const std::function<int()>& fn) {
  auto report = [&](int code, const std::string& msg) {
    if (json)
      reports::render_error_json(kind, code, msg, std::cout);
    else
      std::cerr << "fabcheck " << kind << ": " << msg << "\n";
    return code;
  };
  try {
    return fn();
  } catch (const UsageError& e) {
    return report(kExitUsage, e.what());
  } catch (const InternalError& e) {
    return report(kExitInternal, e.what());
  } catch (const SysErrorException& e) {
    return report(kExitInternal, std::string("system call failed: ") + e.what());
  } catch (const std::exception& e) {
    return report(kExitInternal, std::string("internal error: ") + e.what());
  }
}

void write_output(const std::string& flag, const std::string& out, const std::string& text) {
  if (out.empty() || out == "-")
    std::cout << text;
  else
    write_output_file(flag, out, text);
}

void check_stdout_or_path(const std::string& flag, const std::string& out) {
  if (!out.empty() && out != "-") check_output_path(flag, out);
}

ProbeContext node_probe_context(const std::string& sysroot) {
  ProbeContext ctx;
  ctx.env = Environment::from_process();
  if (sysroot.empty()) {
    ctx.roots = SystemRoots::live_system(ctx.env.get("HOME").value_or(""));
    return ctx;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(sysroot, ec))
    throw UsageError("--sysroot " + sysroot +
                     ": not a directory; give the root of a copied tree holding sys/, proc/, etc/");
  ctx.roots = SystemRoots::under(sysroot);
  return ctx;
}

std::string self_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw UsageError("cannot find this binary's path (/proc/self/exe): pass --agent-path");
  return p.string();
}

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  for (auto& item : split(text, ','))
    if (!item.empty()) items.push_back(std::move(item));
  return items;
}

}  // namespace fabkit::cli
