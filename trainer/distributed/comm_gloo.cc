// The Gloo backend of Comm: c10d::ProcessGroupGloo (LibTorch 1.13) over a c10d::TCPStore.
// The only file that touches c10d for CPU training.
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>

#include "trainer/distributed/comm.h"

namespace fabkit::trainer {
namespace {

at::Tensor wrap(const float* p, size_t n) {
  return torch::from_blob(const_cast<float*>(p), {static_cast<int64_t>(n)}, torch::kFloat32);
}
at::Tensor wrap(double* p, size_t n) {
  return torch::from_blob(p, {static_cast<int64_t>(n)}, torch::kFloat64);
}

class GlooComm;

// One Gloo Work in flight plus what to do once it landed (the reduce-scatter's local sum).
class GlooRequest : public CommRequest {
 public:
  GlooRequest(GlooComm& comm, const char* op, size_t count, c10::intrusive_ptr<c10d::Work> work,
              std::function<void()> finish)
      : comm_(comm), op_(op), count_(count), work_(std::move(work)), finish_(std::move(finish)) {}
  ~GlooRequest() override {
    // Gloo's worker may still write into the caller's buffers: never leave before it is done.
    if (!done_) {
      try {
        wait();
      } catch (const std::exception&) {
        // The comm is marked dead; the next collective reports it.
      }
    }
  }
  void wait() override;

 private:
  GlooComm& comm_;
  const char* op_;
  size_t count_;
  c10::intrusive_ptr<c10d::Work> work_;
  std::function<void()> finish_;
  bool done_ = false;
};

class GlooComm : public Comm {
 public:
  explicit GlooComm(const CommOptions& o) : rank_(o.rank), world_(o.world_size) {
    using std::chrono::milliseconds;
    std::string stage = "store";
    try {
      c10d::TCPStoreOptions so;
      so.port = o.master_port;
      // torchrun's agent already serves the store: a second server on its port would fail (or,
      // on another host, silently split the job), so every rank is a client then.
      so.isServer = (o.rank == 0) && !o.store_hosted_by_agent;
      so.numWorkers = o.store_hosted_by_agent ? c10::nullopt : c10::optional<size_t>(o.world_size);
      so.waitWorkers = !o.store_hosted_by_agent;
      so.timeout = milliseconds(o.rendezvous_timeout_ms);
      auto tcp = c10::make_intrusive<c10d::TCPStore>(o.master_addr, so);
      auto store = c10::make_intrusive<c10d::PrefixStore>(o.store_prefix, tcp);

      stage = "device";
      auto options = c10d::ProcessGroupGloo::Options::create(milliseconds(o.collective_timeout_ms));
      if (!o.socket_ifname.empty()) {
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(o.socket_ifname));
        transport_ = "tcp via interface " + o.socket_ifname + " (GLOO_SOCKET_IFNAME)";
      } else {
        char host[256] = {0};
        gethostname(host, sizeof(host) - 1);
        options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
        transport_ = std::string("tcp via the address of host name ") + host +
                     " (loopback if it does not resolve; set GLOO_SOCKET_IFNAME to choose)";
      }
      options->threads = 2;
      stage = "connect";
      pg_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, o.rank, o.world_size, options);
    } catch (const std::exception& e) {
      throw CommError("rank " + std::to_string(o.rank) + "/" + std::to_string(o.world_size) +
                      ": Gloo rendezvous failed at the " + stage + " stage (master " + o.master_addr +
                      ":" + std::to_string(o.master_port) + ", timeout " +
                      std::to_string(o.rendezvous_timeout_ms) + " ms): " + first_line(e.what()) +
                      " -- check that every rank started, MASTER_ADDR/MASTER_PORT agree and the "
                      "port is reachable");
    }
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::string backend() const override { return "gloo"; }
  std::string transport() const override { return transport_; }

  void allreduce_sum(float* data, size_t count) override {
    std::vector<at::Tensor> t{wrap(data, count)};
    run("allreduce", count, [&] { return pg_->allreduce(t); });
  }
  void allreduce_sum(double* data, size_t count) override {
    std::vector<at::Tensor> t{wrap(data, count)};
    run("allreduce(f64)", count, [&] { return pg_->allreduce(t); });
  }
  void allgather(const float* in, size_t count, float* out) override { allgather_async(in, count, out)->wait(); }
  CommRequestPtr allgather_async(const float* in, size_t count, float* out) override {
    // List allgather: _allgather_base throws in 1.13's Gloo. The outputs are views of `out`.
    std::vector<at::Tensor> input{wrap(in, count)};
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < world_; ++r) outputs[0].push_back(wrap(out + r * count, count));
    return issue("allgather", count, [&] { return pg_->allgather(outputs, input); }, nullptr);
  }
  CommRequestPtr reduce_scatter_add_async(const float* in, size_t count, float* out) override {
    // alltoall_base: chunk r of `in` goes to rank r; chunk r of `received` is rank r's
    // contribution to this rank. The sum over r lands in `out` once it arrived.
    const size_t total = count * static_cast<size_t>(world_);
    at::Tensor input = wrap(in, total);
    auto received = std::make_shared<at::Tensor>(torch::empty({static_cast<int64_t>(total)}, torch::kFloat32));
    std::vector<int64_t> equal_splits;
    auto finish = [received, count, out, world = world_] {
      at::Tensor sum = torch::from_blob(out, {static_cast<int64_t>(count)}, torch::kFloat32);
      for (int r = 0; r < world; ++r) sum.add_(received->narrow(0, static_cast<int64_t>(r * count), static_cast<int64_t>(count)));
    };
    return issue("reduce-scatter", total,
                 [&] { return pg_->alltoall_base(*received, input, equal_splits, equal_splits); }, finish);
  }
  void broadcast(float* data, size_t count, int root) override {
    std::vector<at::Tensor> t{wrap(data, count)};
    c10d::BroadcastOptions bo;
    bo.rootRank = root;
    run("broadcast", count, [&] { return pg_->broadcast(t, bo); });
  }
  void barrier() override {
    run("barrier", 0, [&] { return pg_->barrier(); });
  }
  void send(const float* data, size_t count, int dst, int tag) override {
    std::vector<at::Tensor> t{wrap(data, count)};
    run("send", count, [&] { return pg_->send(t, dst, tag); });
  }
  void recv(float* data, size_t count, int src, int tag) override {
    std::vector<at::Tensor> t{wrap(data, count)};
    run("recv", count, [&] { return pg_->recv(t, src, tag); });
  }

 private:
  friend class GlooRequest;
  static std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

  template <typename F>
  CommRequestPtr issue(const char* op, size_t count, F&& start, std::function<void()> finish) {
    if (dead_) {
      throw CommError(std::string(op) + " on rank " + std::to_string(rank_) +
                      ": the process group already failed; no collective may follow");
    }
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = start();
    } catch (const std::exception& e) {
      fail(op, count, e);
    }
    return std::make_unique<GlooRequest>(*this, op, count, std::move(work), std::move(finish));
  }

  template <typename F>
  void run(const char* op, size_t count, F&& start) {
    issue(op, count, std::forward<F>(start), nullptr)->wait();
  }

  void wait_work(const char* op, size_t count, c10d::Work& work) {
    try {
      work.wait();
    } catch (const std::exception& e) {
      fail(op, count, e);
    }
  }

  [[noreturn]] void fail(const char* op, size_t count, const std::exception& e) {
    // A peer died or the link broke. Peers may be blocked in another collective, so the group
    // cannot be reused: mark it dead and let the caller end the process.
    dead_ = true;
    throw CommError("Gloo " + std::string(op) + " of " + std::to_string(count) +
                    " elements failed on rank " + std::to_string(rank_) + "/" +
                    std::to_string(world_) + ": " + first_line(e.what()) +
                    " -- another rank probably exited or the network dropped; the job stops");
  }

  int rank_;
  int world_;
  bool dead_ = false;
  std::string transport_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
};

void GlooRequest::wait() {
  if (done_) return;
  done_ = true;
  comm_.wait_work(op_, count_, *work_);
  if (finish_) finish_();
}

}  // namespace

std::unique_ptr<Comm> make_gloo_comm(const CommOptions& options) {
  return std::make_unique<GlooComm>(options);
}

std::unique_ptr<Comm> make_comm(const CommOptions& options) {
  if (options.world_size <= 1) return make_local_comm();
  // Debian's LibTorch is CPU-only (no ProcessGroupNCCL); a CUDA LibTorch build adds comm_nccl.cc
  // and selects it here when a GPU is visible.
  return make_gloo_comm(options);
}

}  // namespace fabkit::trainer
