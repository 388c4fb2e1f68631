#include "trainer/distributed/local_spawn.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "common/errors.h"

namespace fabkit::trainer {
namespace {

std::vector<pid_t>* g_children = nullptr;

// Ctrl-C / scancel on the parent reaches the ranks too.
void forward_signal(int sig) {
  if (!g_children) return;
  for (pid_t p : *g_children) {
    if (p > 0) kill(p, sig);
  }
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) +
                                  " (" + strsignal(WTERMSIG(status)) + ")";
  return "stopped with status " + std::to_string(status);
}

}  // namespace

uint16_t pick_free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw SysErrorException({"socket", errno, "AF_INET"});
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    int e = errno;
    close(fd);
    throw SysErrorException({"bind", e, "127.0.0.1:0"});
  }
  close(fd);
  return ntohs(a.sin_port);
}

SpawnResult spawn_local_ranks(const std::vector<std::string>& argv, int nproc, uint16_t master_port,
                              int grace_ms) {
  std::vector<pid_t> pids(nproc, -1);
  g_children = &pids;
  for (int r = 0; r < nproc; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      int e = errno;
      forward_signal(SIGKILL);
      throw SysErrorException({"fork", e, "rank " + std::to_string(r)});
    }
    if (pid == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(master_port).c_str(), 1);
      setenv("FABTRAIN_LOCAL_SPAWN", "1", 1);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv("/proc/self/exe", args.data());
      _exit(127);
    }
    pids[r] = pid;
  }
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  SpawnResult result;
  int alive = nproc;
  while (alive > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    int rank = -1;
    for (int r = 0; r < nproc; ++r) {
      if (pids[r] == pid) rank = r;
    }
    if (rank < 0) continue;
    pids[rank] = -1;
    --alive;
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok && result.failed_rank < 0) {
      result.failed_rank = rank;
      result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      result.message = "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ") " +
                       describe(status) + "; stopping the other ranks";
      // The survivors would otherwise sit in a collective until its timeout.
      forward_signal(SIGTERM);
      auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
      while (alive > 0 && std::chrono::steady_clock::now() < deadline) {
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p > 0) {
          for (auto& q : pids) {
            if (q == p) q = -1;
          }
          --alive;
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
      forward_signal(SIGKILL);
    }
  }
  g_children = nullptr;
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  return result;
}

}  // namespace fabkit::trainer
