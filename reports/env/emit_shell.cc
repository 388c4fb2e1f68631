// `source FILE` or `eval "$(fabcheck emit-env --format shell)"`: POSIX sh, values single-quoted.
#include "reports/env/emitter.h"

namespace fabkit::reports::env {
using namespace profile;  // the resolved settings' types

std::string emit_shell(const EmitInput& in) {
  std::string out = comment_header(in, "shell");
  for (const auto& r : in.settings)
    if (r.setting.value) out += "export " + r.name + "=" + sh_quote(*r.setting.value) + "\n";
  return out;
}

}  // namespace fabkit::reports::env
