// `docker run` arguments as shell words on one line:
//   eval "docker run $(fabcheck emit-env --format docker) IMAGE CMD"
// --network host: NCCL needs the host's interfaces and the RoCE netdevs; --ulimit memlock=-1:
// ibv_reg_mr pins memory; --shm-size: docker's 64 MiB /dev/shm breaks NCCL's SHM transport;
// --device /dev/infiniband: the verbs device files; -v for nccl.conf and the topology file.
// -e K=V is taken literally by docker (no comma splitting), so lists pass unchanged.
#include "reports/env/emitter.h"

namespace fabkit::reports::env {
using namespace profile;  // the resolved settings' types

std::string emit_docker(const EmitInput& in) {
  // docker's -v SRC:DST:MODE and --device HOST:CONTAINER:PERMS split on ':' (a ',' only
  // separates the mode's options, after the second ':').
  check_container_paths(in.container.binds, "bind", "docker", ":", "docker's `-v SRC:DST:MODE`");
  check_container_paths(in.container.devices, "device", "docker", ":",
                        "docker's `--device HOST:CONTAINER:PERMS`");
  std::vector<std::string> words;
  const auto& c = in.container;
  if (c.network_host) words.insert(words.end(), {"--network", "host"});
  if (c.memlock_unlimited) words.insert(words.end(), {"--ulimit", "memlock=-1"});
  if (c.shm_size) words.insert(words.end(), {"--shm-size", *c.shm_size});
  for (const auto& d : c.devices) words.insert(words.end(), {"--device", d});
  for (const auto& b : c.binds) words.insert(words.end(), {"-v", b + ":" + b + ":ro"});
  for (const auto& r : in.settings)
    if (r.setting.value) words.insert(words.end(), {"-e", r.name + "=" + *r.setting.value});
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + sh_quote(w);
  return out + "\n";
}

}  // namespace fabkit::reports::env
