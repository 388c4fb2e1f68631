// Finding the plugin as the dynamic loader would: a name with a '/' is opened as it is; any other
// name is looked up in LD_LIBRARY_PATH, then in the directories ldconfig caches (ld.so.conf and
// its includes), then in the default directories (ld.so(8), "Rpath token expansion" aside: the
// calling libnccl's own DT_RUNPATH is not known here). The ld.so cache itself is not read: it is
// built from those same directories, and a stale cache is what `ldconfig` fixes anyway.
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "common/file_reader.h"
#include "common/root_open.h"
#include "common/trusted_path.h"
#include "common/unique_fd.h"
#include "probes/nccl_net/nccl_net_facts.h"

namespace fabkit::probes {
namespace {

namespace fs = std::filesystem;

// glibc's compiled-in trusted directories (elf/dl-load.c SYSTEM_DIRS), searched after the cache.
const char* kDefaultDirs[] = {"/lib", "/usr/lib", "/lib64", "/usr/lib64"};

// A path as the node names it ("/opt/amazon/ofi-nccl/lib"), where this run reads it: itself on the
// live system, under DIR with --sysroot DIR (reads then stay inside DIR: common/root_open.h).
fs::path on_host(const SystemRoots& roots, const std::string& node_path) {
  std::string rel = node_path;
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  return roots.root / rel;
}

void add_ld_so_conf(const SystemRoots& roots, const std::string& node_path, const std::string& from,
                    int depth, std::vector<LibrarySearchDir>& out) {
  if (depth > 8) return;  // an include cycle: ldconfig would loop too, we stop
  auto text = read_text(on_host(roots, node_path));
  if (!ok(text)) return;
  for (const auto& line : parse_ld_so_conf(value(text))) {
    if (!line.directory.empty()) {
      out.push_back({line.directory, from});
      continue;
    }
    // ldconfig resolves a relative include against the including file's directory.
    std::string glob = line.include;
    if (glob.empty()) continue;
    if (glob.front() != '/') glob = fs::path(node_path).parent_path().string() + "/" + glob;
    fs::path g(glob);
    std::vector<std::string> matches;
    for (const auto& name : list_dir(on_host(roots, g.parent_path().string())))
      if (fnmatch(g.filename().c_str(), name.c_str(), 0) == 0) matches.push_back(name);
    for (const auto& m : matches) {  // list_dir is sorted, as glob(3) is
      std::string inc = (g.parent_path() / m).string();
      add_ld_so_conf(roots, inc, inc, depth + 1, out);
    }
  }
}

std::vector<LibrarySearchDir> search_dirs(const ProbeContext& ctx,
                                          std::vector<std::string>& issues) {
  std::vector<LibrarySearchDir> dirs;
  // ld.so reads LD_LIBRARY_PATH once, when the process starts: only the process environment
  // counts, not an NCCL config file (NCCL's setenv comes too late for the loader).
  if (auto llp = ctx.env.get("LD_LIBRARY_PATH")) {
    std::string cur;
    auto flush = [&] {
      // An empty entry is the current directory, and so is a relative one's base: whatever
      // directory the job starts in decides what root loads.
      if (cur.empty())
        issues.push_back(
            "LD_LIBRARY_PATH has an empty entry, which the loader reads as the current "
            "directory");
      else if (cur.front() != '/')
        issues.push_back("LD_LIBRARY_PATH entry '" + cur +
                         "' is relative to the current directory");
      else
        dirs.push_back({cur, "LD_LIBRARY_PATH"});
      cur.clear();
    };
    for (char c : *llp) {
      if (c == ':' || c == ';')
        flush();
      else
        cur += c;
    }
    flush();
  }
  add_ld_so_conf(ctx.roots, "/etc/ld.so.conf", "/etc/ld.so.conf", 0, dirs);
  for (const char* d : kDefaultDirs) dirs.push_back({d, "default"});
  return dirs;
}

std::optional<std::string> find_library(const SystemRoots& roots, const std::string& name,
                                        const std::vector<LibrarySearchDir>& dirs) {
  if (name.find('/') != std::string::npos) {
    if (name.front() != '/') return std::nullopt;  // relative to a directory we cannot know
    return path_is_regular_file(on_host(roots, name)) ? std::optional<std::string>(name)
                                                      : std::nullopt;
  }
  for (const auto& d : dirs) {
    std::string p = d.dir + (d.dir.back() == '/' ? "" : "/") + name;
    if (path_is_regular_file(on_host(roots, p))) return p;
  }
  return std::nullopt;
}

LibraryFile examine(const ProbeContext& ctx, const std::string& node_path) {
  LibraryFile f;
  f.path = node_path;
  fs::path host = on_host(ctx.roots, node_path);
  auto fd = open_for_reading(host);
  if (auto* e = std::get_if<SysError>(&fd)) {
    f.elf.error = e->to_string();
  } else {
    int raw = std::get<UniqueFd>(fd).get();
    struct stat st {};
    if (fstat(raw, &st) != 0 || !S_ISREG(st.st_mode)) {
      f.elf.error = "not a regular file";
    } else {
      ElfReadAt read = [raw](uint64_t offset, uint64_t size, std::string* out) {
        out->assign(size_t(size), '\0');
        size_t done = 0;
        while (done < size) {
          ssize_t n = pread(raw, out->data() + done, size - done, off_t(offset + done));
          if (n <= 0) return false;
          done += size_t(n);
        }
        return true;
      };
      f.elf = read_elf_library(uint64_t(st.st_size), read, version_markers());
    }
  }
  classify_library(f);
  if (ctx.roots.live) {
    TrustOptions t;
    t.regular_file = true;
    if (auto d = find_distrust(host, t)) {
      f.distrust = d->message();
      f.distrust_fix = d->fix;
    }
  }
  return f;
}

}  // namespace

NcclNetFacts gather_nccl_net(const ProbeContext& ctx, const NcclEnvFacts& nccl_env) {
  NcclNetFacts f;
  if (const auto* v = find_variable(nccl_env, "NCCL_NET_PLUGIN")) {
    f.requested = v->value;
    f.requested_source = v->source;
  }
  if (const auto* v = find_variable(nccl_env, "NCCL_NET")) f.nccl_net = v->value;
  if (const auto* v = find_variable(nccl_env, "NCCL_PROTO")) f.nccl_proto = v->value;
  f.trust_checked = ctx.roots.live;
  f.search_dirs = search_dirs(ctx, f.search_issues);
  auto names = plugin_names_to_try(f.requested);
  f.disabled = f.requested && names.empty();
  for (const auto& name : names) {
    PluginCandidate c{name, find_library(ctx.roots, name, f.search_dirs)};
    f.candidates.push_back(c);
    if (c.path && !f.plugin) f.plugin = examine(ctx, *c.path);
  }
  // The NCCL a job loads is its own (a PyTorch wheel's nvidia/nccl/lib, a container's): the one the
  // loader finds here is the node's best guess, and the judge says which one it compared with.
  if (auto nccl = find_library(ctx.roots, "libnccl.so.2", f.search_dirs))
    f.nccl = examine(ctx, *nccl);
  gather_gcp(ctx, nccl_env, f);
  return f;
}

}  // namespace fabkit::probes
