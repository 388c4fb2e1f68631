// DeepSpeed's launcher (deepspeed/launcher/runner.py) reads ~/.deepspeed_env and ./.deepspeed_env
// with `for var in fd.readlines(): key, val = var.split('=', maxsplit=1)`, strips both, and
// exports them on every node; the PDSH runner pastes them into `export KEY=VAL; ` (unquoted in
// several releases, double-quoted only when outside [\w@%+=:,./-] in newer ones). Hence: no
// comments and no blank lines (a line without '=' raises ValueError and aborts the launch), no
// whitespace at either end of a value (stripped), and nothing the shell would interpret.
#include "common/errors.h"
#include "reports/env/emitter.h"
#include "profile/value_rules.h"

namespace fabkit::reports::env {
using namespace profile;  // the resolved settings' types

std::string emit_deepspeed(const EmitInput& in) {
  std::string out;
  for (const auto& r : in.settings) {
    if (!r.setting.value) continue;
    const std::string& v = *r.setting.value;
    // check_values has run, but the rule DeepSpeed needs is stated here, where it applies.
    if (auto e = check_safe_chars(v))
      throw UsageError("emit-env --format deepspeed: " + r.name + "=" + quote_for_message(v) + " " +
                       *e + "; DeepSpeed pastes .deepspeed_env values into a shell command");
    out += r.name + "=" + v + "\n";
  }
  return out;
}

}  // namespace fabkit::reports::env
