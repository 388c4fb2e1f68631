// The Gloo backend of Comm: c10d::ProcessGroupGloo over a c10d::TCPStore, for CPU training.
// Its requests and failure rule are comm_c10d.h's, shared with the NCCL backend.
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "common/net_route.h"
#include "trainer/distributed/comm.h"
#include "trainer/distributed/comm_c10d.h"
#include "trainer/distributed/comm_store.h"

namespace fabkit::trainer {
namespace {

at::Tensor wrap(const float* p, size_t n) {
  return torch::from_blob(const_cast<float*>(p), {static_cast<int64_t>(n)}, torch::kFloat32);
}
at::Tensor wrap(double* p, size_t n) {
  return torch::from_blob(p, {static_cast<int64_t>(n)}, torch::kFloat64);
}
at::Tensor wrap_bytes(const void* p, size_t n) {
  return torch::from_blob(const_cast<void*>(p), {static_cast<int64_t>(n)}, torch::kUInt8);
}

// The local address this host would use toward the master (resolved with a deadline).
std::optional<std::string> address_toward(const std::string& master) {
  std::string err;
  auto addrs = resolve_bounded(master, &err);
  if (!addrs) return std::nullopt;
  for (const auto& a : *addrs) {
    if (auto local = route_source_address(a)) return local;
  }
  return std::nullopt;
}

class GlooComm : public Comm, C10dGroup {
 public:
  explicit GlooComm(const CommOptions& o) : C10dGroup("Gloo", o) {
    using std::chrono::milliseconds;
    std::string stage = "store";
    try {
      auto store = make_rendezvous_store(o);

      stage = "device";
      // Gloo's own timeout only says "timed out": fabtrain's deadline (comm_c10d.h) comes first.
      auto options = c10d::ProcessGroupGloo::Options::create(backend_timeout(o));
      if (!o.socket_ifname.empty()) {
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(o.socket_ifname));
        transport_ = "tcp via interface " + o.socket_ifname + " (GLOO_SOCKET_IFNAME)";
      } else if (auto local = address_toward(o.master_addr)) {
        // Gloo's default binds to whatever the host name resolves to, which on cluster nodes is
        // often the management network (or, inside a container or namespace, an address no
        // peer can reach). The address the kernel routes toward the master is on a network
        // every rank reaches the master through.
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(*local));
        transport_ = "tcp via " + *local + " (this host's route to MASTER_ADDR " + o.master_addr +
                     "; set GLOO_SOCKET_IFNAME to choose)";
      } else {
        char host[256] = {0};
        gethostname(host, sizeof(host) - 1);
        options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
        transport_ = std::string("tcp via the address of host name ") + host + " (no route to MASTER_ADDR " +
                     o.master_addr + " found; loopback if the name does not resolve; set GLOO_SOCKET_IFNAME)";
      }
      options->threads = 2;
      stage = "connect";
      pg_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, o.rank, o.world_size, options);
      watch_through(store);
    } catch (const std::exception& e) {
      throw CommError("rank " + std::to_string(o.rank) + "/" + std::to_string(o.world_size) +
                      ": Gloo rendezvous failed at the " + stage + " stage (master " + o.master_addr +
                      ":" + std::to_string(o.master_port) + ", timeout " +
                      std::to_string(o.rendezvous_timeout_ms) + " ms): " + first_line(e.what()) +
                      " -- check that every rank started, MASTER_ADDR/MASTER_PORT agree and the "
                      "port is reachable");
    }
  }

  ~GlooComm() override {
    // After a failure (fabtrain's deadline came first) Gloo's worker threads may still sit in the
    // collective until Gloo's own, longer timeout, and ~ProcessGroupGloo joins them: a dying rank
    // would hang for that long while its stack unwinds. The process is on its way out; leave the
    // group to it.
    if (dead_) pg_.release();
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::string backend() const override { return "gloo"; }
  std::string transport() const override { return transport_; }

  void allreduce_sum(float* data, size_t count) override {
    std::vector<at::Tensor> t{wrap(data, count)};
    run("allreduce", count, [&] { return C10dWorks{pg_->allreduce(t)}; });
  }
  void allreduce_sum(double* data, size_t count) override {
    std::vector<at::Tensor> t{wrap(data, count)};
    run("allreduce(f64)", count, [&] { return C10dWorks{pg_->allreduce(t)}; });
  }
  void allgather(const float* in, size_t count, float* out) override { allgather_async(in, count, out)->wait(); }
  // allgather and reduce-scatter are direct exchanges with every peer over Gloo's point-to-point
  // buffers, which send from and receive into the caller's memory. ProcessGroupGloo's list
  // allgather copies the input into a flat buffer and the result back out (1.5x the gathered
  // bytes in memcpy per call), and its alltoall routes this rank's own chunk through a scratch
  // buffer too. Per rank the bytes on the wire are those of a ring: (N-1)/N of the buffer.
  CommRequestPtr allgather_async(const float* in, size_t count, float* out) override {
    std::copy(in, in + count, out + static_cast<size_t>(rank_) * count);
    return exchange("allgather", count, [&](int peer) { return wrap(in, count); },
                    [&](int peer) { return wrap(out + static_cast<size_t>(peer) * count, count); }, nullptr);
  }
  CommRequestPtr reduce_scatter_add_async(const float* in, size_t count, float* out) override {
    // Chunk p of `in` goes to peer p; peer p's chunk for this rank lands in its slot of
    // `received`. The sum (own chunk + received) is added into `out` on wait().
    auto received = std::make_shared<std::vector<float>>(count * static_cast<size_t>(world_));
    auto finish = [received, in, count, out, rank = rank_, world = world_] {
      for (int p = 0; p < world; ++p) {
        const float* chunk = p == rank ? in + static_cast<size_t>(rank) * count : received->data() + static_cast<size_t>(p) * count;
        for (size_t i = 0; i < count; ++i) out[i] += chunk[i];
      }
    };
    return exchange("reduce-scatter", count, [&](int peer) { return wrap(in + static_cast<size_t>(peer) * count, count); },
                    [&](int peer) { return wrap(received->data() + static_cast<size_t>(peer) * count, count); }, finish);
  }
  // --reduce-dtype bf16: the same exchange, moving each chunk's bf16 bits (2 bytes a value, half
  // the fp32 call's wire bytes). The receiver widens every chunk to fp32 and sums in fp32, adding
  // straight into the fp32 shard: more accurate than NCCL, whose reduction kernels add in bf16
  // on the way (one rounding per hop); here the only rounding is each rank's gradient to bf16
  // before it is sent. The chunks go as raw bytes: Gloo's point-to-point calls only copy them.
  CommRequestPtr reduce_scatter_add_bf16_async(const uint16_t* in, size_t count,
                                               float* out) override {
    const size_t chunk_bytes = count * sizeof(uint16_t);
    auto received = std::make_shared<std::vector<uint16_t>>(count * static_cast<size_t>(world_));
    auto finish = [received, in, count, out, rank = rank_, world = world_] {
      // ATen's mixed-dtype add widens bf16 to fp32 exactly and sums in fp32, vectorised.
      at::Tensor acc = torch::from_blob(out, {static_cast<int64_t>(count)}, torch::kFloat32);
      for (int p = 0; p < world; ++p) {
        const uint16_t* chunk = p == rank ? in + static_cast<size_t>(rank) * count
                                          : received->data() + static_cast<size_t>(p) * count;
        acc.add_(torch::from_blob(const_cast<uint16_t*>(chunk), {static_cast<int64_t>(count)},
                                  torch::kBFloat16));
      }
    };
    return exchange(
        "reduce-scatter(bf16)", count,
        [&](int peer) { return wrap_bytes(in + static_cast<size_t>(peer) * count, chunk_bytes); },
        [&](int peer) {
          return wrap_bytes(received->data() + static_cast<size_t>(peer) * count, chunk_bytes);
        },
        finish);
  }
  void broadcast(float* data, size_t count, int root) override {
    std::vector<at::Tensor> t{wrap(data, count)};
    c10d::BroadcastOptions bo;
    bo.rootRank = root;
    run("broadcast", count, [&] { return C10dWorks{pg_->broadcast(t, bo)}; });
  }
  void broadcast_bytes(void* data, size_t bytes, int root) override {
    std::vector<at::Tensor> t{wrap_bytes(data, bytes)};
    c10d::BroadcastOptions bo;
    bo.rootRank = root;
    run("broadcast(bytes)", bytes, [&] { return C10dWorks{pg_->broadcast(t, bo)}; });
  }
  void allgather_bytes(const void* in, size_t bytes, void* out) override {
    auto* o = static_cast<unsigned char*>(out);
    std::copy_n(static_cast<const unsigned char*>(in), bytes, o + static_cast<size_t>(rank_) * bytes);
    exchange("allgather(bytes)", bytes, [&](int) { return wrap_bytes(in, bytes); },
             [&](int peer) { return wrap_bytes(o + static_cast<size_t>(peer) * bytes, bytes); }, nullptr)
        ->wait();
  }
  void barrier() override {
    run("barrier", 0, [&] { return C10dWorks{pg_->barrier()}; });
  }
  void pause_barrier(const std::string& what) override { store_barrier(what); }
  void send(const float* data, size_t count, int dst, int tag) override {
    std::vector<at::Tensor> t{wrap(data, count)};
    run("send", count, [&] { return C10dWorks{pg_->send(t, dst, tag)}; });
  }
  void recv(float* data, size_t count, int src, int tag) override {
    std::vector<at::Tensor> t{wrap(data, count)};
    run("recv", count, [&] { return C10dWorks{pg_->recv(t, src, tag)}; });
  }
  // Watched under the collective deadline from its issue, like every other request.
  CommRequestPtr send_async(const float* data, size_t count, int dst, int tag) override {
    std::vector<at::Tensor> t{wrap(data, count)};
    return issue(
        "send", count, [&] { return C10dWorks{pg_->send(t, dst, tag)}; }, nullptr);
  }

 private:
  // Posts a receive from and a send to every peer under one fresh tag, so concurrent exchanges
  // (a prefetch beside a reduction) never match each other's messages. Every rank issues its
  // exchanges in the same order, so the tags agree.
  template <typename SendTo, typename RecvFrom>
  CommRequestPtr exchange(const char* op, size_t count, SendTo&& send_to, RecvFrom&& recv_from,
                          std::function<void()> finish) {
    const int tag = kExchangeTagBase + static_cast<int>(next_exchange_++ % kExchangeTags);
    return issue(
        op, count,
        [&] {
          C10dWorks works;
          for (int step = 1; step < world_; ++step) {
            // Peers in ring order from this rank, so all ranks do not hit rank 0 first.
            const int from = (rank_ - step + world_) % world_;
            std::vector<at::Tensor> r{recv_from(from)};
            works.push_back(pg_->recv(r, from, tag));
          }
          for (int step = 1; step < world_; ++step) {
            const int to = (rank_ + step) % world_;
            std::vector<at::Tensor> t{send_to(to)};
            works.push_back(pg_->send(t, to, tag));
          }
          return works;
        },
        std::move(finish));
  }

  std::string failure_message(const char* op, size_t count,
                              const std::string& cause) const override {
    // A peer died or the link broke: the caller ends the process.
    return "Gloo " + std::string(op) + " of " + std::to_string(count) +
           " elements failed on rank " + std::to_string(rank_) + "/" + std::to_string(world_) +
           ": " + cause + " -- another rank probably exited or the network dropped; the job stops";
  }

  // Tags of the internal exchanges: [2^30, 2^30 + 2^20); pipeline send/recv tags stay below.
  static constexpr int kExchangeTagBase = 1 << 30;
  static constexpr uint64_t kExchangeTags = 1 << 20;

  uint64_t next_exchange_ = 0;
  std::string transport_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
};

}  // namespace

std::unique_ptr<Comm> make_gloo_comm(const CommOptions& options) {
  return std::make_unique<GlooComm>(options);
}

std::unique_ptr<Comm> make_comm(const CommOptions& options) {
  // GPU ranks: NCCL, also in a world of one (the local comm copies host memory only).
  if (options.cuda_device >= 0) return make_nccl_comm(options);
  if (options.world_size <= 1) return make_local_comm();
  return make_gloo_comm(options);
}

}  // namespace fabkit::trainer
