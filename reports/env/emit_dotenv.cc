// KEY=VALUE for dotenv readers: docker --env-file and systemd EnvironmentFile take the value
// literally (quotes included), python-dotenv strips quotes. Only a bare value reads the same in
// all of them, so values stay bare; the reader already refused anything a bare value cannot
// carry (value_rules.h). '#' lines are comments in all three.
#include "reports/env/emitter.h"

namespace fabkit::reports::env {
using namespace profile;  // the resolved settings' types

std::string emit_dotenv(const EmitInput& in) {
  std::string out = comment_header(in, "dotenv");
  for (const auto& r : in.settings)
    if (r.setting.value) out += r.name + "=" + *r.setting.value + "\n";
  return out;
}

}  // namespace fabkit::reports::env
