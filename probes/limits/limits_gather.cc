#include <sys/resource.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <sstream>

#include "common/file_reader.h"
#include "common/root_open.h"
#include "probes/limits/limits_facts.h"

namespace fabkit::probes {
namespace {

std::optional<RlimitPair> live_rlimit(int resource, const char* name, std::vector<SysError>& errs) {
  struct rlimit rl {};
  if (getrlimit(resource, &rl) != 0) {
    errs.push_back(SysError{"getrlimit", errno, name});
    return std::nullopt;
  }
  RlimitPair p;
  p.soft_unlimited = rl.rlim_cur == RLIM_INFINITY;
  p.soft = p.soft_unlimited ? 0 : static_cast<uint64_t>(rl.rlim_cur);
  p.hard_unlimited = rl.rlim_max == RLIM_INFINITY;
  p.hard = p.hard_unlimited ? 0 : static_cast<uint64_t>(rl.rlim_max);
  return p;
}

void detect_container(const ProbeContext& ctx, ContainerFacts& c) {
  auto note = [&](const std::string& kind, const std::string& why) {
    if (!c.detected) c.kind = kind;
    c.detected = true;
    c.evidence.push_back(why);
  };
  if (path_exists(ctx.roots.root / ".dockerenv")) note("docker", "/.dockerenv exists");
  if (path_exists(ctx.roots.root / "run/.containerenv"))
    note("podman", "/run/.containerenv exists");
  if (auto v = ctx.env.get("container")) note(*v, "container=" + *v + " in the environment");
  if (ctx.env.has("KUBERNETES_SERVICE_HOST")) note("kubernetes", "KUBERNETES_SERVICE_HOST is set");
  if (ctx.env.has("APPTAINER_CONTAINER") || ctx.env.has("SINGULARITY_CONTAINER"))
    note("apptainer", "APPTAINER_CONTAINER/SINGULARITY_CONTAINER is set");
  if (auto cg = read_text(ctx.roots.proc / "1/cgroup", 64 * 1024); ok(cg)) {
    const std::string& s = value(cg);
    if (s.find("/docker") != std::string::npos) note("docker", "/proc/1/cgroup names docker");
    if (s.find("kubepods") != std::string::npos) note("kubernetes", "/proc/1/cgroup names kubepods");
    if (s.find("/lxc") != std::string::npos) note("lxc", "/proc/1/cgroup names lxc");
  }
}

}  // namespace

std::optional<RlimitPair> parse_proc_limits_line(const std::string& text, const std::string& row) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!starts_with(line, row)) continue;
    // "Max locked memory         8388608              8388608              bytes"
    std::istringstream fields(line.substr(row.size()));
    std::string soft, hard;
    if (!(fields >> soft >> hard)) return std::nullopt;
    RlimitPair p;
    try {
      p.soft_unlimited = soft == "unlimited";
      if (!p.soft_unlimited) p.soft = std::stoull(soft);
      p.hard_unlimited = hard == "unlimited";
      if (!p.hard_unlimited) p.hard = std::stoull(hard);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    return p;
  }
  return std::nullopt;
}

std::optional<uint64_t> parse_shm_size_from_mounts(const std::string& mounts) {
  std::istringstream in(mounts);
  std::string dev, mnt, type, opts;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    if (!(f >> dev >> mnt >> type >> opts) || mnt != "/dev/shm") continue;
    for (const auto& o : split(opts, ',')) {
      if (!starts_with(o, "size=")) continue;
      std::string v = o.substr(5);
      uint64_t mult = 1;
      char unit = v.empty() ? '\0' : v.back();
      if (unit == 'k' || unit == 'K') mult = 1ull << 10;
      if (unit == 'm' || unit == 'M') mult = 1ull << 20;
      if (unit == 'g' || unit == 'G') mult = 1ull << 30;
      if (mult != 1) v.pop_back();
      try {
        return std::stoull(v) * mult;
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

LimitsFacts gather_limits(const ProbeContext& ctx) {
  LimitsFacts f;
  if (ctx.roots.live) {
    f.source = "getrlimit";
    f.memlock_bytes = live_rlimit(RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK", f.errors);
    f.stack_bytes = live_rlimit(RLIMIT_STACK, "RLIMIT_STACK", f.errors);
    f.nofile = live_rlimit(RLIMIT_NOFILE, "RLIMIT_NOFILE", f.errors);
    struct statvfs vfs {};
    auto shm = ctx.roots.dev / "shm";
    if (statvfs(shm.c_str(), &vfs) == 0) {
      f.shm_size_bytes = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
      f.shm_source = "statvfs(" + shm.string() + ")";
    } else {
      f.errors.push_back(SysError{"statvfs", errno, shm.string()});
    }
  } else {
    auto path = ctx.roots.proc / "self/limits";
    f.source = path.string();
    auto text = read_text(path);
    if (ok(text)) {
      f.memlock_bytes = parse_proc_limits_line(value(text), "Max locked memory");
      f.stack_bytes = parse_proc_limits_line(value(text), "Max stack size");
      f.nofile = parse_proc_limits_line(value(text), "Max open files");
    } else {
      f.errors.push_back(error(text));
    }
    auto mounts_path = ctx.roots.proc / "mounts";
    if (auto mounts = read_text(mounts_path); ok(mounts)) {
      f.shm_size_bytes = parse_shm_size_from_mounts(value(mounts));
      f.shm_source = mounts_path.string();
    }
  }
  detect_container(ctx, f.container);
  return f;
}

}  // namespace fabkit::probes
