// Probe 2, runtime limits: RLIMIT_MEMLOCK/STACK/NOFILE, /dev/shm size, container detection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/finding.h"
#include "common/json.h"
#include "probes/probe_context.h"

namespace fabkit::probes {

struct RlimitPair {
  bool soft_unlimited = false;
  uint64_t soft = 0;  // bytes for memlock/stack, a count for nofile
  bool hard_unlimited = false;
  uint64_t hard = 0;
};

struct ContainerFacts {
  bool detected = false;
  std::string kind;                   // docker, podman, kubernetes, apptainer, lxc, systemd-nspawn
  std::vector<std::string> evidence;  // "/.dockerenv exists", "container=podman"
};

struct LimitsFacts {
  std::string source;  // "getrlimit" (live) or the proc/self/limits file read under --sysroot
  std::optional<RlimitPair> memlock_bytes;
  std::optional<RlimitPair> stack_bytes;
  std::optional<RlimitPair> nofile;
  std::optional<uint64_t> shm_size_bytes;  // /dev/shm capacity; nullopt when not mounted/unknown
  std::string shm_source;
  ContainerFacts container;
  std::vector<SysError> errors;
};

LimitsFacts gather_limits(const ProbeContext& ctx);
// Pure. has_rdma: RDMA devices exist on this node (memlock matters for ibv_reg_mr then).
std::vector<Finding> judge_limits(const LimitsFacts& facts, bool has_rdma);
Json to_json(const LimitsFacts& facts);

// Parsers exposed for tests: /proc/<pid>/limits and a /proc/mounts tmpfs size= option.
std::optional<RlimitPair> parse_proc_limits_line(const std::string& limits_text,
                                                 const std::string& row_name);
std::optional<uint64_t> parse_shm_size_from_mounts(const std::string& mounts_text);

}  // namespace fabkit::probes
