// Runs the ranks of a runner as threads on loopback addresses (Gloo's own test style).
#pragma once

#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <functional>
#include <thread>
#include <vector>

#include "fabric/allreduce/allreduce_types.h"

namespace fabkit::fabric::testing {

// A port the kernel just handed out on 127.0.0.1 (closed again; reused via SO_REUSEADDR).
inline uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

inline AllreduceSpec loopback_spec(int rank, uint16_t port, std::vector<uint64_t> sizes) {
  AllreduceSpec s;
  s.rank = rank;
  s.world_size = 2;
  s.local_addr = "127.0.0.1";
  s.peer_addr = "127.0.0.1";
  s.port = port;
  s.token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";  // the generated
                                                                                 // form: no scrypt
  s.sizes_bytes = std::move(sizes);
  s.iters = 3;
  s.warmup_iters = 1;
  s.timeout_ms = 3000;
  return s;
}

using Runner = std::function<TransportRun(const AllreduceSpec&)>;

inline std::vector<TransportRun> run_ranks(const std::vector<AllreduceSpec>& specs, const Runner& runner) {
  std::vector<TransportRun> runs(specs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < specs.size(); ++i) threads.emplace_back([&, i] { runs[i] = runner(specs[i]); });
  for (auto& t : threads) t.join();
  return runs;
}

}  // namespace fabkit::fabric::testing
