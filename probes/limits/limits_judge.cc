#include <string>

#include "common/human_bytes.h"
#include "probes/limits/limits_facts.h"

namespace fabkit::probes {
namespace {

constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kShmMinBytes = kGiB;  // NCCL's shared-memory transport and proxy buffers
constexpr uint64_t kNofileMin = 4096;    // NCCL opens sockets per peer and per channel

std::string describe(bool unlimited, uint64_t v, bool bytes) {
  if (unlimited) return "unlimited";
  return bytes ? human_bytes(v) : std::to_string(v);
}

const char* kMemlockFix =
    "add '* soft memlock unlimited' and '* hard memlock unlimited' to /etc/security/limits.conf; "
    "for slurmd/systemd services set LimitMEMLOCK=infinity (systemctl edit slurmd) and "
    "PropagateResourceLimitsExcept=MEMLOCK in slurm.conf; in containers run with "
    "'docker run --ulimit memlock=-1'";

}  // namespace

std::vector<Finding> judge_limits(const LimitsFacts& f, bool has_rdma) {
  std::vector<Finding> out;
  for (const auto& e : f.errors)
    out.push_back(warn("limits.read_failed", e.object, "could not read a limit: " + e.to_string(),
                       "run fabcheck with access to /proc and /dev/shm"));

  if (f.memlock_bytes && !f.memlock_bytes->soft_unlimited) {
    const auto& m = *f.memlock_bytes;
    std::string seen = "RLIMIT_MEMLOCK soft " + describe(false, m.soft, true) + ", hard " +
                       describe(m.hard_unlimited, m.hard, true);
    if (has_rdma) {
      out.push_back(fail("limits.memlock_low", "RLIMIT_MEMLOCK",
                         seen + "; RDMA memory registration pins buffers and needs unlimited: "
                                "this is the known cause of NCCL's \"Call to ibv_reg_mr failed\"",
                         kMemlockFix));
    } else {
      out.push_back(info("limits.memlock_low", "RLIMIT_MEMLOCK",
                         seen + "; no RDMA devices here, so nothing registers memory, but an RDMA "
                                "node with this limit fails ibv_reg_mr",
                         kMemlockFix));
    }
  }

  if (f.shm_size_bytes && *f.shm_size_bytes < kShmMinBytes) {
    std::string fix = f.container.detected
                          ? "restart the container with '--shm-size=8g' (docker) or mount a "
                            "larger tmpfs on /dev/shm"
                          : "mount -o remount,size=8G /dev/shm";
    out.push_back(warn("limits.shm_small", "/dev/shm",
                       "/dev/shm holds " + human_bytes(*f.shm_size_bytes) +
                           "; NCCL's shared-memory transport needs at least 1 GiB (containers "
                           "default to 64 MiB) and fails with 'Bus error' or 'No space left'",
                       fix));
  } else if (!f.shm_size_bytes) {
    out.push_back(warn("limits.shm_missing", "/dev/shm",
                       "/dev/shm is not mounted or its size is unknown; NCCL needs it for "
                       "intra-node transfers",
                       "mount -t tmpfs -o size=8G tmpfs /dev/shm"));
  }

  if (f.stack_bytes && !f.stack_bytes->soft_unlimited) {
    out.push_back(info("limits.stack_limited", "RLIMIT_STACK",
                       "stack soft limit " + describe(false, f.stack_bytes->soft, true) +
                           "; HPC vendors recommend unlimited for MPI/NCCL jobs (deep recursion "
                           "in some launchers and Fortran codes)",
                       "ulimit -s unlimited (or '* soft stack unlimited' in "
                       "/etc/security/limits.conf)"));
  }

  if (f.nofile && !f.nofile->soft_unlimited && f.nofile->soft < kNofileMin) {
    out.push_back(warn("limits.nofile_low", "RLIMIT_NOFILE",
                       "open-files soft limit " + std::to_string(f.nofile->soft) +
                           " is below " + std::to_string(kNofileMin) +
                           "; NCCL and Gloo open sockets per peer and run out at scale",
                       "ulimit -n 65536 (or '* soft nofile 65536' in /etc/security/limits.conf; "
                       "docker: --ulimit nofile=65536:65536)"));
  }

  if (f.container.detected) {
    std::string ev;
    for (const auto& e : f.container.evidence) ev += (ev.empty() ? "" : "; ") + e;
    out.push_back(info("limits.container", f.container.kind,
                       "running inside a container (" + ev +
                           "); the PCI tree may be hidden from NCCL and limits are the "
                           "container's, not the host's",
                       "run with --network host, --ulimit memlock=-1, --shm-size=8g, and pass "
                       "NCCL_TOPO_FILE if the PCI tree is hidden"));
  }
  return out;
}

static Json rlimit_json(const std::optional<RlimitPair>& p) {
  if (!p) return nullptr;
  Json j;
  j["soft"] = p->soft_unlimited ? Json("unlimited") : Json(p->soft);
  j["hard"] = p->hard_unlimited ? Json("unlimited") : Json(p->hard);
  return j;
}

Json to_json(const LimitsFacts& f) {
  Json j;
  j["source"] = f.source;
  j["memlock_bytes"] = rlimit_json(f.memlock_bytes);
  j["stack_bytes"] = rlimit_json(f.stack_bytes);
  j["nofile"] = rlimit_json(f.nofile);
  j["shm_size_bytes"] = f.shm_size_bytes ? Json(*f.shm_size_bytes) : Json(nullptr);
  j["shm_source"] = f.shm_source;
  j["container"] = {{"detected", f.container.detected},
                    {"kind", f.container.kind},
                    {"evidence", f.container.evidence}};
  Json errs = Json::array();
  for (const auto& e : f.errors) errs.push_back(e.to_string());
  j["errors"] = errs;
  return j;
}

}  // namespace fabkit::probes
