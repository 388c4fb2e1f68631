#include "reports/env/emitter.h"

#include "common/errors.h"
#include "profile/value_rules.h"

namespace fabkit::reports::env {
using namespace profile;  // the resolved settings' types

std::optional<Format> format_from_string(const std::string& s) {
  for (Format f : {Format::kDeepspeed, Format::kShell, Format::kDotenv, Format::kSlurm,
                   Format::kApptainer, Format::kDocker, Format::kJson})
    if (s == to_string(f)) return f;
  return std::nullopt;
}

const char* to_string(Format f) {
  switch (f) {
    case Format::kDeepspeed: return "deepspeed";
    case Format::kShell: return "shell";
    case Format::kDotenv: return "dotenv";
    case Format::kSlurm: return "slurm";
    case Format::kApptainer: return "apptainer";
    case Format::kDocker: return "docker";
    case Format::kJson: return "json";
  }
  return "deepspeed";
}

const char* kFormatList() { return "deepspeed|shell|dotenv|slurm|apptainer|docker|json"; }

namespace {

std::string emit_format(Format f, const EmitInput& in) {
  switch (f) {
    case Format::kDeepspeed: return emit_deepspeed(in);
    case Format::kShell: return emit_shell(in);
    case Format::kDotenv: return emit_dotenv(in);
    case Format::kSlurm: return emit_slurm(in);
    case Format::kApptainer: return emit_apptainer(in);
    case Format::kDocker: return emit_docker(in);
    case Format::kJson: return emit_json(in);
  }
  throw InternalError("emit: unhandled format");
}

}  // namespace

std::string emit(Format f, const EmitInput& in) {
  check_values(in, to_string(f));
  std::string text = emit_format(f, in);
  if (text.size() > kMaxEmitBytes)
    throw UsageError(std::string("emit-env --format ") + to_string(f) + ": the output would be " +
                     std::to_string(text.size()) + " bytes, over the limit of " +
                     std::to_string(kMaxEmitBytes) +
                     " bytes (every byte of it lands in the environment or command line of each "
                     "process the launcher starts); shorten the profile's values (docs/profile.md, "
                     "\"Limits\")");
  return text;
}

std::string sh_quote(const std::string& word) {
  if (!word.empty() && !check_safe_chars(word)) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string comment_safe(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return out;
}

void check_values(const EmitInput& in, const char* format) {
  for (const auto& r : in.settings) {
    if (!r.setting.value) continue;
    if (auto e = check_variable_value(r.name, *r.setting.value))
      throw UsageError(std::string("emit-env --format ") + format + ": " + r.name + "=" +
                       quote_for_message(*r.setting.value) + " " + *e +
                       "; fix the value in the profile (docs/profile.md lists each grammar)");
  }
  for (const auto* list : {&in.container.binds, &in.container.devices})
    for (const auto& path : *list)
      if (auto e = check_variable_value("NCCL_TOPO_FILE", path))
        throw UsageError(std::string("emit-env --format ") + format + ": container path " +
                         quote_for_message(path) + " " + *e);
}

void check_container_paths(const std::vector<std::string>& paths, const char* kind,
                           const char* format, const std::string& separators,
                           const std::string& flag_syntax) {
  for (const auto& path : paths) {
    const size_t at = path.find_first_of(separators);
    if (at == std::string::npos) continue;
    throw UsageError(std::string("emit-env --format ") + format + ": container " + kind + " path " +
                     quote_for_message(path) + " contains '" + path[at] + "', which " +
                     flag_syntax +
                     " reads as a separator, so the container would get other paths than this "
                     "one; move it to a path without " +
                     (separators.size() > 1 ? "',' or ':'" : "':'") +
                     " and profile again (or fix container." + kind + "s in the profile)");
  }
}

std::string comment_header(const EmitInput& in, const char* format) {
  std::string out = "# fabkit emit-env --format " + std::string(format) + " for host " +
                    comment_safe(in.host) + " from " + comment_safe(in.source) + "\n";
  if (in.profile_has_per_host)
    out += "# Some values are per host: generate this on each host (emit-env resolves for the "
           "host it runs on).\n";
  for (const auto& r : in.settings) {
    out += "# " + r.name + ": " + to_string(r.setting.basis) +
           (r.setting.value ? "" : ", left unset") + (r.per_host ? ", per host" : "") + "\n";
  }
  return out;
}

}  // namespace fabkit::reports::env
