// Emitters (reports/env): one resolved host environment -> the bytes one consumer reads (DeepSpeed, a shell,
// dotenv readers, sbatch, apptainer, docker, programs). One file per format. Each refuses, with a
// UsageError naming the variable and value, what its consumer could not carry.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "profile/profile_model.h"
#include "profile/resolver.h"

namespace fabkit::reports::env {
using profile::ResolvedSetting;
using profile::ContainerNeeds;

enum class Format { kDeepspeed, kShell, kDotenv, kSlurm, kApptainer, kDocker, kJson };
std::optional<Format> format_from_string(const std::string& s);
const char* to_string(Format f);
const char* kFormatList();  // "deepspeed|shell|dotenv|slurm|apptainer|docker|json"

struct EmitInput {
  std::string host;
  std::string source;  // "cluster.json (sha256:...)" or "live probe of this node"
  std::vector<ResolvedSetting> settings;  // resolve_settings() order; unset ones included
  ContainerNeeds container;
  bool profile_has_per_host = false;  // values below differ between hosts
};

// The most bytes one emit-env output may have. Every byte of it ends up in the environment (or
// on the command line) of every process a launcher starts, and Linux caps those together at
// ARG_MAX (commonly 2 MiB, shared with the job's own arguments and environment). A value is at
// most profile::kMaxValueBytes; this bounds the whole, so the sum cannot grow past what an exec
// carries either.
inline constexpr size_t kMaxEmitBytes = 64 * 1024;

// The whole output, or UsageError before any of it exists (no partial output): a value a
// format cannot carry (named, with the format and the reason), or an output over kMaxEmitBytes.
std::string emit(Format f, const EmitInput& in);

std::string emit_deepspeed(const EmitInput& in);
std::string emit_shell(const EmitInput& in);
std::string emit_dotenv(const EmitInput& in);
std::string emit_slurm(const EmitInput& in);
std::string emit_apptainer(const EmitInput& in);
std::string emit_docker(const EmitInput& in);
std::string emit_json(const EmitInput& in);

// Shared pieces.
// POSIX sh single-quoting ('...' with ' as '\''); a word of only safe characters stays bare.
std::string sh_quote(const std::string& word);
// A comment line's text with control characters replaced, so a path cannot end the comment.
std::string comment_safe(const std::string& text);
// Re-checks every value against its variable's grammar (value_rules.h) before any byte is
// produced; throws UsageError naming variable and value.
void check_values(const EmitInput& in, const char* format);
// Container formats write each bind and device path into a flag whose syntax splits on some
// characters (docker -v SRC:DST:MODE splits on ':'; apptainer --bind SRC:DST:OPTS,... on ':' and
// ','). A path containing one is refused: UsageError naming the path, the format and the flag.
// kind: "bind" or "device" (the profile's container.binds / container.devices).
void check_container_paths(const std::vector<std::string>& paths, const char* kind,
                           const char* format, const std::string& separators,
                           const std::string& flag_syntax);
// "# fabkit emit-env --format F for host H from SOURCE" + basis lines, each starting with "# ".
std::string comment_header(const EmitInput& in, const char* format);

}  // namespace fabkit::reports::env
