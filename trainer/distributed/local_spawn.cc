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

#include "common/environment.h"
#include "common/errors.h"
#include "common/spawn.h"

namespace fabkit::trainer {
namespace {

std::vector<pid_t>* g_children = nullptr;

void forward_signal(int sig) {
  if (!g_children) return;
  for (pid_t p : *g_children) {
    if (p > 0) kill(p, sig);
  }
}

// scancel / kill / Slurm's USR1 on the parent reaches the ranks too. A Ctrl-C on the terminal is
// not forwarded: the terminal already sent SIGINT to the whole foreground process group, ranks
// included, and a second copy would read as the second SIGINT, which aborts instead of stopping.
// The kernel marks terminal-generated signals with si_code SI_KERNEL (> 0 codes are kernel too);
// kill(2) and sigqueue(3) give SI_USER and SI_QUEUE (<= 0).
void forward_received(int sig, siginfo_t* info, void*) {
  if (sig == SIGINT && info && (info->si_code == SI_KERNEL || info->si_code > 0)) return;
  forward_signal(sig);
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

namespace {

// Rank r's environment: ours with torchrun's variables for a single-node job set (replacing any
// inherited ones), built here in the parent. The child is started by posix_spawn (common/spawn.h)
// and runs no code of ours before exec: fork() in a process with LibTorch loaded copies its
// threads' locks mid-use and runs its pthread_atfork handlers, and setenv/to_string/push_back
// there could allocate under a lock another thread held at the fork.
std::vector<std::string> rank_environment(const Environment& base, int rank, int nproc,
                                          uint16_t master_port) {
  Environment env = base;
  env.set("RANK", std::to_string(rank));
  env.set("LOCAL_RANK", std::to_string(rank));
  env.set("WORLD_SIZE", std::to_string(nproc));
  env.set("LOCAL_WORLD_SIZE", std::to_string(nproc));
  env.set("MASTER_ADDR", "127.0.0.1");
  env.set("MASTER_PORT", std::to_string(master_port));
  env.set("FABTRAIN_LOCAL_SPAWN", "1");
  std::vector<std::string> out;
  for (const auto& [k, v] : env.vars()) out.push_back(k + "=" + v);
  return out;
}

}  // namespace

SpawnResult spawn_local_ranks(const std::vector<std::string>& argv, int nproc, uint16_t master_port,
                              int grace_ms) {
  std::vector<std::vector<std::string>> envs;
  const Environment ours = Environment::from_process();
  for (int r = 0; r < nproc; ++r) envs.push_back(rank_environment(ours, r, nproc, master_port));
  std::vector<pid_t> pids(nproc, -1);
  g_children = &pids;
  for (int r = 0; r < nproc; ++r) {
    // This process group and our signal dispositions and mask, as a fork would have given: a
    // Ctrl-C on the terminal reaches every rank, and forward_signal covers scancel.
    SpawnOptions so;
    so.program = "/proc/self/exe";
    so.env = &envs[static_cast<size_t>(r)];
    if (int e = spawn_process(argv, so, &pids[static_cast<size_t>(r)]); e != 0) {
      forward_signal(SIGKILL);
      for (pid_t p : pids)
        if (p > 0) waitpid(p, nullptr, 0);  // SIGKILLed: returns promptly
      g_children = nullptr;
      throw SysErrorException(
          {"posix_spawn", e, "rank " + std::to_string(r) + " (/proc/self/exe)"});
    }
  }
  struct sigaction sa {};
  sa.sa_sigaction = forward_received;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);  // Slurm's pre-timeout signal: the ranks checkpoint and stop

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
  signal(SIGUSR1, SIG_DFL);
  return result;
}

}  // namespace fabkit::trainer
