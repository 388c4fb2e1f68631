// The NCCL backend of Comm: c10d::ProcessGroupNCCL over the rendezvous store, one CUDA device per
// rank, for GPU training. Its requests and failure rule are comm_c10d.h's, shared with Gloo.
//
// Why ProcessGroupNCCL rather than the NCCL API directly: it already runs each collective on its
// own CUDA stream ordered after the caller's stream, makes Work::wait() a stream wait (the host
// does not block, so a prefetched all-gather travels while earlier kernels run), keeps the
// buffers alive for the caching allocator, and has the watchdog that aborts a communicator whose
// collective outlives the timeout. That is the machinery FSDP itself stands on.
#include "trainer/distributed/comm.h"

#if FABKIT_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <chrono>
#include <functional>

#include "trainer/distributed/comm_c10d.h"
#include "trainer/distributed/comm_store.h"
#endif

namespace fabkit::trainer {

#if FABKIT_TORCH_CUDA
namespace {

// A caller's buffer as a tensor on this rank's device: the buffer itself when it is device memory,
// else a device copy (staged) that finish() copies back for outputs.
struct DeviceView {
  at::Tensor device;
  at::Tensor host;  // defined when staged
};

class NcclComm : public Comm, C10dGroup {
 public:
  explicit NcclComm(const CommOptions& o)
      : C10dGroup("NCCL", o), device_(at::kCUDA, static_cast<c10::DeviceIndex>(o.cuda_device)) {
    poll_completion_ = true;
    std::string stage = "device";
    try {
      const int visible = static_cast<int>(c10::cuda::device_count());
      if (o.cuda_device >= visible) {
        throw CommError(
            "rank " + std::to_string(o.rank) + ": CUDA device " + std::to_string(o.cuda_device) +
            " requested, " + std::to_string(visible) +
            " visible (CUDA_VISIBLE_DEVICES, the driver) -- start fewer ranks per node or fix the "
            "device choice");
      }
      c10::cuda::set_device(device_.index());
      stage = "store";
      auto store = make_rendezvous_store(o);
      stage = "communicator";
      auto options = c10d::ProcessGroupNCCL::Options::create();
      // The watchdog aborts every rank (SIGABRT) once a collective outlives this timeout;
      // fabtrain's own deadline (comm_c10d.h), which names the missing ranks, must come first.
      options->timeout = backend_timeout(o);
      pg_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, o.rank, o.world_size, options);
      watch_through(store);
      // Create the NCCL communicator now (ncclCommInitRank), not at the first collective: a
      // rendezvous or transport failure is then reported as such, before the model loads.
      pg_->eagerConnectSingleDevice(device_);
    } catch (const CommError&) {
      throw;
    } catch (const std::exception& e) {
      throw CommError(
          "rank " + std::to_string(o.rank) + "/" + std::to_string(o.world_size) +
          " on cuda:" + std::to_string(o.cuda_device) + ": NCCL setup failed at the " + stage +
          " stage (master " + o.master_addr + ":" + std::to_string(o.master_port) + ", timeout " +
          std::to_string(o.rendezvous_timeout_ms) + " ms): " + first_line(e.what()) +
          " -- check that every rank started, MASTER_ADDR/MASTER_PORT agree, and the NCCL log "
          "(NCCL_DEBUG=INFO) for the network it tried");
    }
  }
  ~NcclComm() override {
    stop_watching();
    try {
      if (pg_) dead_ ? pg_->abort() : pg_->shutdown();
    } catch (const std::exception&) {
      // Nothing to report to: the process is ending.
    }
    // A dead group is aborted (its kernels end, its watchdog stops) but not destroyed:
    // ~ProcessGroupNCCL joins the heartbeat thread, which may be blocked for good in a check of
    // the store (no receive timeout) when the rank that serves the store is the one that stopped.
    // The process is on its way out with the error; leave the group to it, as GlooComm does.
    if (dead_) pg_.release();
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::string backend() const override { return "nccl"; }
  std::string transport() const override {
    return "NCCL on cuda:" + std::to_string(device_.index()) +
           " (the network NCCL chose is read from its log)";
  }

  void allreduce_sum(float* data, size_t count) override {
    allreduce(data, count, torch::kFloat32, "allreduce");
  }
  void allreduce_sum(double* data, size_t count) override {
    allreduce(data, count, torch::kFloat64, "allreduce(f64)");
  }
  CommRequestPtr allreduce_sum_landed(double* data, size_t count) override {
    if (!is_device_memory(data)) {
      allreduce_sum(data, count);  // host memory: staged, landed on return
      return std::make_unique<CompletedRequest>();
    }
    DeviceView v = inout(data, count, torch::kFloat64);
    std::vector<at::Tensor> ts{v.device};
    c10::intrusive_ptr<c10d::Work> work;
    CommRequestPtr landed = issue(
        "allreduce(f64)", count,
        [&] {
          work = pg_->allreduce(ts);
          return C10dWorks{work};
        },
        [v] {}, /*host_wait=*/true);
    try {
      work->wait();  // the caller's stream waits for the sum now (no host block), as allreduce_sum
    } catch (const std::exception&) {
      landed->wait();  // the deadline's and the failure's path: CommError, the group marked dead
      throw;
    }
    return landed;
  }
  void allgather(const float* in, size_t count, float* out) override {
    allgather_async(in, count, out)->wait();
  }
  CommRequestPtr allgather_async(const float* in, size_t count, float* out) override {
    DeviceView i = input(in, count, torch::kFloat32);
    DeviceView o = output(out, count * static_cast<size_t>(world_), torch::kFloat32);
    return issue(
        "allgather", count, [&] { return C10dWorks{pg_->_allgather_base(o.device, i.device)}; },
        [i, o] { copy_back(o); }, staged(i, o));
  }
  CommRequestPtr reduce_scatter_add_async(const float* in, size_t count, float* out) override {
    DeviceView i = input(in, count * static_cast<size_t>(world_), torch::kFloat32);
    DeviceView o = output(out, count, torch::kFloat32);
    return reduce_scatter_then_add("reduce-scatter", i, o, count, torch::kFloat32);
  }
  // --reduce-dtype bf16: a bf16 _reduce_scatter_base, as FSDP's MixedPrecision(reduce_dtype=bf16)
  // issues it: NCCL's kernels add in bf16 along the way, so the sum is rounded at every hop (Gloo
  // sums in fp32: comm_gloo.cc). The bf16 result lands in a fresh buffer and is widened into the
  // fp32 accumulator on the caller's stream once the collective is waited for.
  CommRequestPtr reduce_scatter_add_bf16_async(const uint16_t* in, size_t count,
                                               float* out) override {
    DeviceView i = input(in, count * static_cast<size_t>(world_), torch::kBFloat16);
    DeviceView o = output(out, count, torch::kFloat32);
    return reduce_scatter_then_add("reduce-scatter(bf16)", i, o, count, torch::kBFloat16);
  }
  void broadcast(float* data, size_t count, int root) override {
    broadcast_view(inout(data, count, torch::kFloat32), count, root, "broadcast");
  }
  void broadcast_bytes(void* data, size_t bytes, int root) override {
    broadcast_view(inout(data, bytes, torch::kUInt8), bytes, root, "broadcast(bytes)");
  }
  void allgather_bytes(const void* in, size_t bytes, void* out) override {
    DeviceView i = input(in, bytes, torch::kUInt8);
    DeviceView o = output(out, bytes * static_cast<size_t>(world_), torch::kUInt8);
    run(
        "allgather(bytes)", bytes,
        [&] { return C10dWorks{pg_->_allgather_base(o.device, i.device)}; },
        [i, o] { copy_back(o); }, staged(i, o));
  }
  void barrier() override {
    c10d::BarrierOptions bo;
    bo.device_ids = {device_.index()};
    run("barrier", 0, [&] { return C10dWorks{pg_->barrier(bo)}; });
  }
  void pause_barrier(const std::string& what) override { store_barrier(what); }
  void send(const float* data, size_t count, int dst, int tag) override {
    DeviceView i = input(data, count, torch::kFloat32);
    std::vector<at::Tensor> t{i.device};
    run(
        "send", count, [&] { return C10dWorks{pg_->send(t, dst, tag)}; }, [i] {}, staged(i, i));
  }
  void recv(float* data, size_t count, int src, int tag) override {
    DeviceView o = output(data, count, torch::kFloat32);
    std::vector<at::Tensor> t{o.device};
    run(
        "recv", count, [&] { return C10dWorks{pg_->recv(t, src, tag)}; }, [o] { copy_back(o); },
        staged(o, o));
  }

 private:
  at::TensorOptions options(at::ScalarType t) const {
    return at::TensorOptions().dtype(t).device(device_);
  }

  // Device memory of this rank's GPU, or host memory (pageable or pinned). Memory of another GPU
  // is a programming error: NCCL would read it through peer access or fault.
  bool is_device_memory(const void* p) const {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky "invalid value" for plain host pointers
      return false;
    }
    if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged) return false;
    if (a.device != device_.index()) {
      throw CommError("NCCL comm on cuda:" + std::to_string(device_.index()) +
                      " was handed memory of cuda:" + std::to_string(a.device) +
                      " (a fabtrain bug: every tensor of a rank lives on its device)");
    }
    return true;
  }
  DeviceView view(const void* p, size_t n, at::ScalarType t, bool copy_in) const {
    const auto len = static_cast<int64_t>(n);
    if (is_device_memory(p))
      return {torch::from_blob(const_cast<void*>(p), {len}, options(t)), at::Tensor()};
    at::Tensor host = torch::from_blob(const_cast<void*>(p), {len}, at::TensorOptions().dtype(t));
    return {copy_in ? host.to(device_) : torch::empty({len}, options(t)), host};
  }
  DeviceView input(const void* p, size_t n, at::ScalarType t) const { return view(p, n, t, true); }
  DeviceView output(void* p, size_t n, at::ScalarType t) const { return view(p, n, t, false); }
  DeviceView inout(void* p, size_t n, at::ScalarType t) const { return view(p, n, t, true); }
  // Host buffers: the host waits for the collective itself (with fabtrain's deadline) before
  // copying back. Device buffers only: the caller's stream waits, the host goes on; a collective
  // that never lands is then caught by the next host wait, which is ordered after it.
  static bool staged(const DeviceView& a, const DeviceView& b) {
    return a.host.defined() || b.host.defined();
  }
  static void copy_back(const DeviceView& v) {
    // A synchronous copy on the current stream, which wait() made wait for the collective.
    if (v.host.defined()) v.host.copy_(v.device);
  }

  void allreduce(void* data, size_t count, at::ScalarType t, const char* op) {
    DeviceView v = inout(data, count, t);
    std::vector<at::Tensor> ts{v.device};
    run(
        op, count, [&] { return C10dWorks{pg_->allreduce(ts)}; }, [v] { copy_back(v); },
        staged(v, v));
  }
  // The reduce-scatter writes a fresh buffer of the wire dtype; the add into the caller's fp32
  // accumulator (widening a bf16 sum) runs on the caller's stream once the collective is waited
  // for.
  CommRequestPtr reduce_scatter_then_add(const char* op, DeviceView i, DeviceView o, size_t count,
                                         at::ScalarType wire) {
    at::Tensor sum = torch::empty({static_cast<int64_t>(count)}, options(wire));
    c10d::ReduceScatterOptions ro;
    ro.reduceOp = c10d::ReduceOp::SUM;
    return issue(
        op, count, [&] { return C10dWorks{pg_->_reduce_scatter_base(sum, i.device, ro)}; },
        [i, o, sum]() mutable {
          if (o.host.defined()) {
            o.host.add_(sum.cpu());
          } else {
            o.device.add_(sum);
          }
        },
        staged(i, o));
  }
  void broadcast_view(DeviceView v, size_t count, int root, const char* op) {
    std::vector<at::Tensor> ts{v.device};
    c10d::BroadcastOptions bo;
    bo.rootRank = root;
    run(
        op, count, [&] { return C10dWorks{pg_->broadcast(ts, bo)}; }, [v] { copy_back(v); },
        staged(v, v));
  }

  // The watcher thread never set a device: without this, its first CUDA call would make a
  // context on device 0 (memory on another rank's GPU).
  bool works_completed(const C10dWorks& works) override {
    const c10::cuda::CUDAGuard on_device(device_);
    return C10dGroup::works_completed(works);
  }

  std::string failure_message(const char* op, size_t count,
                              const std::string& cause) const override {
    return "NCCL " + std::string(op) + " of " + std::to_string(count) +
           " elements failed on rank " + std::to_string(rank_) + "/" + std::to_string(world_) +
           " (cuda:" + std::to_string(device_.index()) + "): " + cause +
           " -- another rank probably exited, the network dropped or the collective timed out; the "
           "NCCL "
           "log (NCCL_DEBUG=INFO) names the transport and the failing peer";
  }

  at::Device device_;
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> pg_;
};

}  // namespace

std::unique_ptr<Comm> make_nccl_comm(const CommOptions& options) {
  return std::make_unique<NcclComm>(options);
}

#else

std::unique_ptr<Comm> make_nccl_comm(const CommOptions& options) {
  throw CommError(
      "rank " + std::to_string(options.rank) +
      ": GPU training needs a CUDA LibTorch with NCCL; this "
      "fabtrain was built against a LibTorch without CUDA -- rebuild against the CUDA torch wheel "
      "(./scripts/setup) or train on CPU (--device cpu)");
}

#endif

}  // namespace fabkit::trainer
