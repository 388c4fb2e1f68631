#include "common/root_open.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <deque>

namespace fabkit {
namespace {

// The kernel's own bound on symlinks followed in one lookup (MAXSYMLINKS, include/linux/namei.h).
constexpr int kMaxSymlinkHops = 40;
// RESOLVE_IN_ROOT answers EAGAIN when a rename raced a `..`; a few tries, then the error.
constexpr int kOpenat2Tries = 8;

// The components that matter for matching a path against a tree: "." and the empty name a
// trailing slash leaves are dropped, everything else kept as written.
std::vector<std::string> components_of(const std::filesystem::path& p) {
  std::vector<std::string> out;
  for (const auto& c : p) {
    std::string s = c.string();
    if (s.empty() || s == ".") continue;
    out.push_back(std::move(s));
  }
  return out;
}

// p against the working directory, not normalised: a tree given as `.` or `capture` and a path
// written as `/abs/capture/sys/...` (or the other way round) are compared as the same place.
std::filesystem::path absolute_of(const std::filesystem::path& p) {
  std::error_code ec;
  auto a = std::filesystem::absolute(p, ec);
  return ec ? p : a;
}

// A tree's own components: absolute and normalised, so `dir/`, `./dir` and `/abs/dir` are one.
std::vector<std::string> tree_components(const std::filesystem::path& dir) {
  return components_of(absolute_of(dir).lexically_normal());
}

std::deque<std::string> split_rel(const std::string& rel) {
  std::deque<std::string> out;
  size_t start = 0;
  while (start <= rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    std::string c = rel.substr(start, end - start);
    if (!c.empty() && c != ".") out.push_back(std::move(c));
    start = end + 1;
  }
  return out;
}

std::optional<std::string> read_link_at(int dirfd, const char* name) {
  std::string buf(4096, '\0');
  ssize_t n = ::readlinkat(dirfd, name, buf.data(), buf.size());
  if (n < 0 || static_cast<size_t>(n) >= buf.size()) return std::nullopt;
  buf.resize(static_cast<size_t>(n));
  return buf;
}

const char* kind_name(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISDIR(m)) return "a directory";
  return "not a regular file";
}

std::string loop_reason(const std::filesystem::path& dir) {
  return "more than " + std::to_string(kMaxSymlinkHops) +
         " symlinks on the way to it (a symlink loop); links resolve inside " + dir.string() +
         " as they would on the captured machine";
}

// openat2 is unknown before Linux 5.6 (ENOSYS), and a seccomp filter written before it (older
// container runtimes) answers ENOSYS or EPERM: then every lookup takes the walk.
std::atomic<bool> g_no_openat2{false};

int openat2_in_root(int root_fd, const std::string& rel, int flags) {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  for (int i = 0; i < kOpenat2Tries; ++i) {
    long fd = ::syscall(SYS_openat2, root_fd, rel.c_str(), &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno == EAGAIN || errno == EINTR) continue;
    return -errno;
  }
  return -EAGAIN;
}

}  // namespace

int open_in_root_by_walk(int root_fd, const std::string& rel, int flags) {
  std::vector<UniqueFd> stack;  // the directories walked into below the root; empty: at the root
  auto here = [&] { return stack.empty() ? root_fd : stack.back().get(); };
  std::deque<std::string> todo = split_rel(rel);
  int hops = 0;
  while (!todo.empty()) {
    std::string name = std::move(todo.front());
    todo.pop_front();
    if (name == "..") {  // the root is its own parent, as RESOLVE_IN_ROOT has it
      if (!stack.empty()) stack.pop_back();
      continue;
    }
    UniqueFd fd(::openat(here(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return -errno;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return -errno;
    if (S_ISLNK(st.st_mode)) {
      if (++hops > kMaxSymlinkHops) return -ELOOP;
      // The link read through its own descriptor: the one just checked, not a name swapped since.
      auto target = read_link_at(fd.get(), "");
      if (!target || target->empty()) return -ENOENT;
      if ((*target)[0] == '/') stack.clear();
      std::deque<std::string> spliced = split_rel(*target);
      todo.insert(todo.begin(), spliced.begin(), spliced.end());
      continue;
    }
    if (todo.empty()) {
      if (flags & O_PATH) return fd.release();
      // The last component again with the caller's flags; O_NOFOLLOW turns a link swapped in since
      // the check above into ELOOP instead of a way out.
      int f = ::openat(here(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
      return f >= 0 ? f : -errno;
    }
    if (!S_ISDIR(st.st_mode)) return -ENOTDIR;
    stack.push_back(std::move(fd));
  }
  int f = ::openat(here(), ".", flags | O_CLOEXEC);
  return f >= 0 ? f : -errno;
}

int open_in_root(int root_fd, const std::string& rel, int flags) {
  if (!g_no_openat2.load(std::memory_order_relaxed)) {
    int fd = openat2_in_root(root_fd, rel, flags);
    if (fd != -ENOSYS && fd != -EPERM) return fd;
    // EPERM is also what a denied file answers; the walk then answers the same for it.
    if (fd == -ENOSYS) g_no_openat2.store(true, std::memory_order_relaxed);
  }
  return open_in_root_by_walk(root_fd, rel, flags);
}

ConfinedTree::ConfinedTree(std::filesystem::path dir)
    : dir_(std::move(dir)), components_(tree_components(dir_)) {}

std::optional<std::string> ConfinedTree::relative(const std::filesystem::path& p) const {
  std::vector<std::string> c = components_of(absolute_of(p));
  if (c.size() < components_.size() ||
      !std::equal(components_.begin(), components_.end(), c.begin()))
    return std::nullopt;
  // DIR/../x names DIR's neighbour (a replay file beside `--sysroot .`), not a path of the tree;
  // a `..` further down (DIR/sys/../../x) is the tree's, and stops at its root.
  if (c.size() > components_.size() && c[components_.size()] == "..") return std::nullopt;
  std::string rel;
  for (size_t i = components_.size(); i < c.size(); ++i) {
    if (c[i] == "/") continue;  // a root name can only come first; never restart at the real /
    rel += (rel.empty() ? "" : "/") + c[i];
  }
  return rel.empty() ? "." : rel;
}

std::variant<int, SysError> ConfinedTree::root_fd() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (root_fd_) return root_fd_.get();
  // Opened once and kept: DIR swapped for another directory (or a link to /) after the first
  // read changes nothing for the reads that follow.
  UniqueFd fd(::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return SysError{"open", errno, dir_.string()};
  root_fd_ = std::move(fd);
  return root_fd_.get();
}

void ConfinedTree::refuse(const std::filesystem::path& p, std::string reason) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& r : refusals_)
    if (r.path == p.string()) {
      r.reason = std::move(reason);
      return;
    }
  refusals_.push_back({p.string(), std::move(reason)});
}

std::vector<TreeRefusal> ConfinedTree::refusals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refusals_;
}

void ConfinedTree::note_failure(const std::filesystem::path& p, const std::string& rel, int root,
                                int err) const {
  if (err == ELOOP) {
    refuse(p, loop_reason(dir_));
    return;
  }
  if (err != ENOENT) return;
  // Absent is a fact ("no such attribute here"), unless p itself is a link whose target is not
  // in the tree: then the tree points out of itself, which the report should say.
  std::filesystem::path r(rel);
  std::string base = r.filename().string();
  if (base.empty() || base == "." || base == "..") return;
  std::string parent = r.parent_path().string();
  int at = open_in_root(root, parent.empty() ? "." : parent, O_PATH | O_DIRECTORY);
  if (at < 0) return;
  UniqueFd dirfd(at);
  struct stat st {};
  if (::fstatat(dirfd.get(), base.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode))
    return;
  std::string target = read_link_at(dirfd.get(), base.c_str()).value_or("?");
  refuse(p, "a symlink to " + target + ", which leads to nothing inside " + dir_.string() +
                ": links resolve inside the tree as they would on the captured machine, and "
                "nothing outside it is read");
}

std::variant<UniqueFd, SysError> ConfinedTree::open_file(const std::filesystem::path& p) const {
  auto rel = relative(p);
  if (!rel) return SysError{"open", EXDEV, p.string() + " (outside " + dir_.string() + ")"};
  auto root = root_fd();
  if (auto* e = std::get_if<SysError>(&root)) return SysError{"open", e->err, p.string()};
  const int root_fd = std::get<int>(root);
  // What it is before opening it: opening a device can act on it (a tape rewinds, a watchdog
  // arms), so anything but a regular file is refused without an open for reading.
  int at = open_in_root(root_fd, *rel, O_PATH);
  if (at < 0) {
    note_failure(p, *rel, root_fd, -at);
    return SysError{"open", -at, p.string()};
  }
  UniqueFd probe(at);
  struct stat st {};
  if (::fstat(probe.get(), &st) != 0) return SysError{"fstat", errno, p.string()};
  auto not_regular = [&](mode_t mode) -> SysError {
    std::string what = kind_name(mode);
    if (!S_ISDIR(mode))
      refuse(p, what +
                    ", not a regular file: under --sysroot only regular files are read "
                    "(a capture holds the contents of /sys and /proc files, not FIFOs, "
                    "sockets or devices)");
    return SysError{"open", S_ISDIR(mode) ? EISDIR : EINVAL,
                    p.string() + " (" + what + "; only regular files are read under a sysroot)"};
  };
  if (!S_ISREG(st.st_mode)) return not_regular(st.st_mode);
  // O_NONBLOCK: should a FIFO be swapped in between the check and this open, the open returns
  // at once and the check below refuses it.
  at = open_in_root(root_fd, *rel, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (at < 0) {
    note_failure(p, *rel, root_fd, -at);
    return SysError{"open", -at, p.string()};
  }
  UniqueFd fd(at);
  if (::fstat(fd.get(), &st) != 0) return SysError{"fstat", errno, p.string()};
  if (!S_ISREG(st.st_mode)) return not_regular(st.st_mode);
  return fd;
}

std::variant<std::string, SysError> ConfinedTree::read_text(const std::filesystem::path& p,
                                                            size_t max_bytes) const {
  auto opened = open_file(p);
  if (auto* e = std::get_if<SysError>(&opened)) return *e;
  const int fd = std::get<UniqueFd>(opened).get();
  std::string out;
  constexpr size_t kStep = 64 * 1024;
  while (out.size() < max_bytes) {
    const size_t at = out.size();
    out.resize(std::min(max_bytes, at + kStep));
    ssize_t n = ::read(fd, out.data() + at, out.size() - at);
    if (n < 0 && errno == EINTR) {
      out.resize(at);
      continue;
    }
    if (n < 0) return SysError{"read", errno, p.string()};
    out.resize(at + static_cast<size_t>(n));
    if (n == 0) break;
  }
  return out;
}

std::optional<std::vector<std::string>> ConfinedTree::list_dir(
    const std::filesystem::path& p) const {
  auto rel = relative(p);
  auto root = root_fd();
  if (!rel || std::holds_alternative<SysError>(root)) return std::nullopt;
  int fd = open_in_root(std::get<int>(root), *rel, O_RDONLY | O_DIRECTORY);
  if (fd < 0) {
    note_failure(p, *rel, std::get<int>(root), -fd);
    return std::nullopt;
  }
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return std::nullopt;
  }
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  return names;
}

std::optional<std::string> ConfinedTree::read_link(const std::filesystem::path& p) const {
  auto rel = relative(p);
  auto root = root_fd();
  if (!rel || std::holds_alternative<SysError>(root)) return std::nullopt;
  std::filesystem::path r(*rel);
  std::string base = r.filename().string();
  if (base.empty() || base == "." || base == "..") return std::nullopt;
  std::string parent = r.parent_path().string();
  int dirfd =
      open_in_root(std::get<int>(root), parent.empty() ? "." : parent, O_PATH | O_DIRECTORY);
  if (dirfd < 0) {
    if (-dirfd == ELOOP) refuse(p, loop_reason(dir_));
    return std::nullopt;
  }
  UniqueFd owned(dirfd);
  return read_link_at(owned.get(), base.c_str());
}

PathKind ConfinedTree::kind(const std::filesystem::path& p) const {
  auto rel = relative(p);
  auto root = root_fd();
  if (!rel || std::holds_alternative<SysError>(root)) return PathKind::kAbsent;
  int fd = open_in_root(std::get<int>(root), *rel, O_PATH);
  if (fd < 0) {
    if (-fd == ELOOP) refuse(p, loop_reason(dir_));
    return PathKind::kAbsent;
  }
  UniqueFd owned(fd);
  struct stat st {};
  if (::fstat(owned.get(), &st) != 0) return PathKind::kAbsent;
  if (S_ISREG(st.st_mode)) return PathKind::kRegular;
  if (S_ISDIR(st.st_mode)) return PathKind::kDirectory;
  return PathKind::kOther;
}

namespace {

struct Registry {
  std::mutex mu;
  std::vector<std::weak_ptr<const ConfinedTree>> trees;
};

// Never destroyed: a tree may outlive static destruction order in a test binary.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

}  // namespace

std::shared_ptr<const ConfinedTree> confine_reads_under(const std::filesystem::path& dir) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  const std::vector<std::string> key = tree_components(dir);
  auto& trees = reg.trees;
  trees.erase(std::remove_if(trees.begin(), trees.end(), [](const auto& w) { return w.expired(); }),
              trees.end());
  for (const auto& w : trees)
    if (auto t = w.lock(); t && tree_components(t->dir()) == key) return t;
  auto tree = std::make_shared<const ConfinedTree>(dir);
  trees.push_back(tree);
  return tree;
}

std::shared_ptr<const ConfinedTree> tree_holding(const std::filesystem::path& p) {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  std::shared_ptr<const ConfinedTree> best;
  size_t best_depth = 0;
  for (const auto& w : reg.trees) {
    auto t = w.lock();
    if (!t || !t->relative(p)) continue;
    // Trees inside trees (a test's fixture below another): the innermost one holds p.
    size_t depth = tree_components(t->dir()).size();
    if (!best || depth > best_depth) {
      best = t;
      best_depth = depth;
    }
  }
  return best;
}

std::variant<UniqueFd, SysError> open_for_reading(const std::filesystem::path& p, int live_flags) {
  if (auto tree = tree_holding(p)) return tree->open_file(p);
  UniqueFd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC | live_flags));
  if (!fd) return SysError{"open", errno, p.string()};
  return fd;
}

namespace {

PathKind live_kind(const std::filesystem::path& p) {
  std::error_code ec;
  auto st = std::filesystem::status(p, ec);
  if (ec || !std::filesystem::exists(st)) return PathKind::kAbsent;
  if (std::filesystem::is_regular_file(st)) return PathKind::kRegular;
  if (std::filesystem::is_directory(st)) return PathKind::kDirectory;
  return PathKind::kOther;
}

PathKind kind_of(const std::filesystem::path& p) {
  if (auto tree = tree_holding(p)) return tree->kind(p);
  return live_kind(p);
}

}  // namespace

bool path_exists(const std::filesystem::path& p) { return kind_of(p) != PathKind::kAbsent; }
bool path_is_directory(const std::filesystem::path& p) {
  return kind_of(p) == PathKind::kDirectory;
}
bool path_is_regular_file(const std::filesystem::path& p) {
  return kind_of(p) == PathKind::kRegular;
}

std::optional<std::string> read_link(const std::filesystem::path& p) {
  if (auto tree = tree_holding(p)) return tree->read_link(p);
  std::error_code ec;
  auto target = std::filesystem::read_symlink(p, ec);
  if (ec) return std::nullopt;
  return target.string();
}

}  // namespace fabkit
