#include "cli/command.h"

#include <filesystem>
#include <iostream>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/file_reader.h"
#include "common/report.h"
#include "profile/atomic_write.h"
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

void write_output(const std::string& out, const std::string& text) {
  if (out.empty() || out == "-")
    std::cout << text;
  else
    profile::write_file_atomically(out, text);
}

void check_output_path(const std::string& flag, const std::string& path) {
  std::filesystem::path p(path);
  std::error_code ec;
  auto dir = p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path();
  if (path.empty() || p.filename().empty() || !std::filesystem::is_directory(dir, ec))
    throw UsageError(flag + " " + path + ": the directory " + dir.string() +
                     " does not exist; create it or give another path");
}

void write_file_output(const std::string& flag, const std::string& path, const std::string& text) {
  check_output_path(flag, path);
  write_file_atomically(path, text);
}

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  for (auto& item : split(text, ','))
    if (!item.empty()) items.push_back(std::move(item));
  return items;
}

}  // namespace fabkit::cli
