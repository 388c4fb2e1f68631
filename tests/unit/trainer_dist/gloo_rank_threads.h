// Gloo ranks as threads on 127.0.0.1 and a tiny Llama config, for the torch tests of
// trainer/distributed, parallel and optim.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "trainer/distributed/comm.h"
#include "trainer/distributed/local_spawn.h"
#include "trainer/model/llama_config.h"

namespace fabkit::trainer {

// Rank r of `world` thread ranks on lo, rendezvous at 127.0.0.1:port.
inline CommOptions thread_rank_options(int r, int world, uint16_t port,
                                       int collective_timeout_ms = 20000) {
  CommOptions o;
  o.rank = r;
  o.world_size = world;
  o.master_port = port;
  o.socket_ifname = "lo";
  o.rendezvous_timeout_ms = 20000;
  o.collective_timeout_ms = collective_timeout_ms;
  return o;
}

// Runs fn(comm) on `world` threads, each with its own Gloo group.
inline void run_ranks(int world, const std::function<void(Comm&)>& fn) {
  const uint16_t port = pick_free_port();
  std::vector<std::thread> threads;
  std::vector<std::string> errors(world);
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto comm = make_gloo_comm(thread_rank_options(r, world, port));
        fn(*comm);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// 2 layers, hidden 16, 4 heads over 2 kv heads, vocab 50: a Llama with every feature, tiny.
inline LlamaConfig tiny_config(bool tied) {
  LlamaConfig c;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 4;
  c.vocab_size = 50;
  c.tie_word_embeddings = tied;
  return c;
}

}  // namespace fabkit::trainer
