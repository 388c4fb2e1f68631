// The grammar of every value a profile may hold. One place, used by the reader (reject bad
// profiles) and by the emitters (refuse what a format cannot carry), so a value that loads is a
// value every format can write.
#pragma once

#include <optional>
#include <string>

#include "common/json.h"

namespace fabkit::profile {

// nullopt when valid, else what is wrong with it ("contains the shell metacharacter ';'").
using RuleError = std::optional<std::string>;

// The longest value (and container path) a profile may hold: PATH_MAX, the longest path the
// kernel resolves (NCCL_TOPO_FILE, binds), and far beyond any NCCL list. Without a limit, one
// long value breaks every exec of a shell that sourced it: Linux refuses an environment string
// over 128 KiB (MAX_ARG_STRLEN) with E2BIG.
inline constexpr size_t kMaxValueBytes = 4096;

// Characters allowed in any emitted value: letters, digits and _ @ % + = : , . / ^ -. None of
// them is special to sh inside a word, to DeepSpeed's launcher (which strips and, in some
// versions, pastes values unquoted into `export K=V;`), to sbatch or to dotenv readers.
RuleError check_safe_chars(const std::string& value);
// Linux interface names: 1..15 bytes (IFNAMSIZ 16 with the NUL), no '/', no whitespace; we also
// refuse anything outside [A-Za-z0-9_.-] because the name ends up in shell and NCCL lists.
RuleError check_interface_name(const std::string& name);
RuleError check_hostname(const std::string& name);
// A version or EC2 instance type recorded for a node ("1.22.0amzn1.0", "p5.48xlarge").
RuleError check_fabric_label(const std::string& value);
// The value of one known variable (profile_model.h known_variables()); at most kMaxValueBytes.
RuleError check_variable_value(const std::string& variable, const std::string& value);
// A short, printable, quoted rendering of a value for error messages.
std::string quote_for_message(const std::string& value);
// The same for any JSON value: strings quoted, others as JSON text (29500, {}, null), shortened.
std::string show_json_value(const nlohmann::ordered_json& value);

}  // namespace fabkit::profile
