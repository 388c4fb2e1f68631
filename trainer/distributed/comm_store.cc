#include "trainer/distributed/comm_store.h"

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <thread>

namespace fabkit::trainer {
namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

c10::intrusive_ptr<c10d::Store> tcp_store(const CommOptions& o) {
  c10d::TCPStoreOptions so;
  so.port = o.master_port;
  // torchrun's agent already serves the store: a second server on its port would fail (or, on
  // another host, silently split the job), so every rank is a client then.
  so.isServer = (o.rank == 0) && !o.store_hosted_by_agent;
  so.numWorkers = o.store_hosted_by_agent ? std::nullopt : std::optional<size_t>(o.world_size);
  so.waitWorkers = !o.store_hosted_by_agent;
  so.timeout = std::chrono::milliseconds(o.rendezvous_timeout_ms);
  return c10::make_intrusive<c10d::TCPStore>(o.master_addr, so);
}

// 128 random bits as hex: this process's name in the store for one handshake.
std::string nonce() {
  std::random_device rd;
  char b[33];
  std::snprintf(b, sizeof(b), "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return b;
}

}  // namespace

c10::intrusive_ptr<c10d::Store> make_rendezvous_store(const CommOptions& o) {
  // A world of one needs no network: NCCL's one-rank communicator only reads its own id back.
  if (o.world_size == 1 && !o.store_hosted_by_agent) {
    return c10::make_intrusive<c10d::PrefixStore>(o.store_prefix,
                                                  c10::make_intrusive<c10d::HashStore>());
  }
  return c10::make_intrusive<c10d::PrefixStore>(o.store_prefix, tcp_store(o));
}

std::string join_store_attempt(const CommOptions& o) {
  if (!o.store_hosted_by_agent) return o.store_prefix;
  using Clock = std::chrono::steady_clock;
  const std::string where = o.master_addr + ":" + std::to_string(o.master_port);
  try {
    auto store = c10::make_intrusive<c10d::PrefixStore>(o.store_prefix + "/join", tcp_store(o));
    std::string generation;
    if (o.rank == 0) {
      // Once per attempt: an attempt has one rank 0, and add() is atomic on the server.
      generation = std::to_string(store->add("attempts", 1));
      // Answer every rank's hello until each confirmed under this generation's keys (which no
      // earlier attempt can have written). A hello left by an earlier attempt may be answered
      // too: nobody waits on it.
      std::set<int> pending;
      for (int r = 1; r < o.world_size; ++r) pending.insert(r);
      const auto deadline = Clock::now() + std::chrono::milliseconds(o.rendezvous_timeout_ms);
      while (!pending.empty()) {
        for (auto it = pending.begin(); it != pending.end();) {
          const std::string r = std::to_string(*it);
          if (store->check({"ready/" + generation + "/" + r})) {
            it = pending.erase(it);
            continue;
          }
          if (store->check({"hello/" + r})) {
            const std::string n = text(store->get("hello/" + r));
            if (!store->check({"welcome/" + n})) store->set("welcome/" + n, bytes(generation));
          }
          ++it;
        }
        if (pending.empty()) break;
        if (Clock::now() >= deadline) {
          std::string missing;
          for (int r : pending) missing += (missing.empty() ? "" : ",") + std::to_string(r);
          throw CommError("rank 0/" + std::to_string(o.world_size) + ": rank(s) " + missing +
                          " did not join attempt " + generation + " at torchrun's store " + where +
                          " within " + std::to_string(o.rendezvous_timeout_ms) +
                          " ms (--rendezvous-timeout-ms) -- check that every rank started and "
                          "reaches MASTER_ADDR:MASTER_PORT");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    } else {
      const std::string n = nonce();
      store->set("hello/" + std::to_string(o.rank), bytes(n));
      store->wait({"welcome/" + n}, std::chrono::milliseconds(o.rendezvous_timeout_ms));
      generation = text(store->get("welcome/" + n));
      store->set("ready/" + generation + "/" + std::to_string(o.rank), bytes("1"));
    }
    return o.store_prefix + "/attempt-" + generation;
  } catch (const CommError&) {
    throw;
  } catch (const std::exception& e) {
    throw CommError("rank " + std::to_string(o.rank) + "/" + std::to_string(o.world_size) +
                    ": joining this attempt at torchrun's store " + where + " failed within " +
                    std::to_string(o.rendezvous_timeout_ms) + " ms (--rendezvous-timeout-ms): " +
                    std::string(e.what()).substr(0, std::string(e.what()).find('\n')) +
                    " -- rank 0 answers every rank there; check that it started and that "
                    "MASTER_ADDR/MASTER_PORT are torchrun's");
  }
}

}  // namespace fabkit::trainer
