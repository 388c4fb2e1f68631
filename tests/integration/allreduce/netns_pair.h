// Two network-namespace hosts joined by a veth pair (198.18.0.0/15 only), unique names per run,
// torn down in the destructor whatever happened. Needs root and iproute2.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fabkit::fabric::testing {

inline int sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

class NetnsPair {
 public:
  NetnsPair() {
    static std::atomic<int> counter{0};
    std::string id = "fka" + std::to_string(getpid() % 100000) + "x" + std::to_string(counter++);
    ns_[0] = id + "a";
    ns_[1] = id + "b";
    std::string v0 = id + "v0", v1 = id + "v1";
    addr_[0] = "198.18.77.1";
    addr_[1] = "198.18.77.2";
    ok_ = sh("ip netns add " + ns_[0]) == 0 && sh("ip netns add " + ns_[1]) == 0 &&
          sh("ip link add " + v0 + " type veth peer name " + v1) == 0 &&
          sh("ip link set " + v0 + " netns " + ns_[0]) == 0 && sh("ip link set " + v1 + " netns " + ns_[1]) == 0 &&
          sh("ip -n " + ns_[0] + " addr add " + addr_[0] + "/24 dev " + v0) == 0 &&
          sh("ip -n " + ns_[1] + " addr add " + addr_[1] + "/24 dev " + v1) == 0 &&
          sh("ip -n " + ns_[0] + " link set " + v0 + " up") == 0 && sh("ip -n " + ns_[1] + " link set " + v1 + " up") == 0 &&
          sh("ip -n " + ns_[0] + " link set lo up") == 0 && sh("ip -n " + ns_[1] + " link set lo up") == 0;
    ifname_[0] = v0;
    ifname_[1] = v1;
  }
  ~NetnsPair() {
    // Deleting a namespace removes its end of the veth, and with it the other end.
    sh("ip netns del " + ns_[0]);
    sh("ip netns del " + ns_[1]);
  }
  bool ok() const { return ok_; }
  const std::string& ns(int i) const { return ns_[i]; }
  const std::string& addr(int i) const { return addr_[i]; }
  const std::string& ifname(int i) const { return ifname_[i]; }

 private:
  std::string ns_[2], addr_[2], ifname_[2];
  bool ok_ = false;
};

// Starts `ip netns exec NS program args...` with FABKIT_TOKEN set and stdout to out_path.
// `ip netns exec` execs the program in place, so the pid is the program's own.
inline pid_t spawn_in_ns(const std::string& ns, const std::vector<std::string>& cmd, const std::string& token,
                         const std::string& out_path) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    int null_fd = ::open("/dev/null", O_WRONLY);
    dup2(null_fd, 2);
    setenv("FABKIT_TOKEN", token.c_str(), 1);
    std::vector<std::string> all = {"ip", "netns", "exec", ns};
    all.insert(all.end(), cmd.begin(), cmd.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp("ip", argv.data());
    _exit(127);
  }
  return pid;
}

inline std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace fabkit::fabric::testing
