#include "trainer/distributed/comm_store.h"

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>

namespace fabkit::trainer {

c10::intrusive_ptr<c10d::Store> make_rendezvous_store(const CommOptions& o) {
  // A world of one needs no network: NCCL's one-rank communicator only reads its own id back.
  if (o.world_size == 1 && !o.store_hosted_by_agent) {
    return c10::make_intrusive<c10d::PrefixStore>(o.store_prefix,
                                                  c10::make_intrusive<c10d::HashStore>());
  }
  c10d::TCPStoreOptions so;
  so.port = o.master_port;
  // torchrun's agent already serves the store: a second server on its port would fail (or, on
  // another host, silently split the job), so every rank is a client then.
  so.isServer = (o.rank == 0) && !o.store_hosted_by_agent;
  so.numWorkers = o.store_hosted_by_agent ? std::nullopt : std::optional<size_t>(o.world_size);
  so.waitWorkers = !o.store_hosted_by_agent;
  so.timeout = std::chrono::milliseconds(o.rendezvous_timeout_ms);
  auto tcp = c10::make_intrusive<c10d::TCPStore>(o.master_addr, so);
  return c10::make_intrusive<c10d::PrefixStore>(o.store_prefix, tcp);
}

}  // namespace fabkit::trainer
