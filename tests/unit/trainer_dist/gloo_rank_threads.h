// Gloo ranks as threads on 127.0.0.1, for the torch tests of trainer/distributed, parallel and
// optim.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "trainer/distributed/comm.h"
#include "trainer/distributed/local_spawn.h"

namespace fabkit::trainer {

// Runs fn(comm) on `world` threads, each with its own Gloo group.
inline void run_ranks(int world, const std::function<void(Comm&)>& fn) {
  const uint16_t port = pick_free_port();
  std::vector<std::thread> threads;
  std::vector<std::string> errors(world);
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        CommOptions o;
        o.rank = r;
        o.world_size = world;
        o.master_port = port;
        o.socket_ifname = "lo";
        o.rendezvous_timeout_ms = 20000;
        o.collective_timeout_ms = 20000;
        auto comm = make_gloo_comm(o);
        fn(*comm);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

}  // namespace fabkit::trainer
