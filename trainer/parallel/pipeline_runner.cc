#include "trainer/parallel/pipeline_runner.h"

#include <torch/torch.h>

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "common/errors.h"
#include "trainer/model/weight_grad_store.h"

#if FABKIT_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace fabkit::trainer {
namespace {

// Bytes of the heap in use. fabtrain keeps freed buffers in the heap (mallopt in train_command),
// so activations are heap blocks and this counts them.
int64_t heap_in_use() { return static_cast<int64_t>(mallinfo2().uordblks); }

}  // namespace

#if FABKIT_TORCH_CUDA
struct PipelineRunner::DeviceTimers {
  using Event = std::unique_ptr<at::cuda::CUDAEvent>;
  // Timing events (the default kind disables timing), one pair per receive, per computation, and
  // one for the whole pipeline part of the step.
  std::vector<std::pair<Event, Event>> recv, compute;
  Event span_start, span_end;
  static Event record_now(c10::DeviceIndex device) {
    auto e = std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault);
    e->record(c10::cuda::getCurrentCUDAStream(device));
    return e;
  }
  void clear() {
    recv.clear();
    compute.clear();
    span_start.reset();
    span_end.reset();
  }
};
#else
struct PipelineRunner::DeviceTimers {
  void clear() {}
};
#endif

PipelineRunner::~PipelineRunner() = default;

int64_t PipelineRunner::memory_in_use() const {
#if FABKIT_TORCH_CUDA
  if (model_.device().is_cuda()) {
    const auto s = c10::cuda::CUDACachingAllocator::getDeviceStats(model_.device().index());
    return s.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)]
        .current;
  }
#endif
  return heap_in_use();
}

void PipelineRunner::note_memory(int64_t base) {
  stats_.activation_bytes_peak = std::max(stats_.activation_bytes_peak, memory_in_use() - base);
}

const PipelineStepStats& PipelineRunner::stats() {
#if FABKIT_TORCH_CUDA
  if (timers_) {
    for (auto& [start, end] : timers_->recv) {
      end->synchronize();
      stats_.recv_wait_ms += start->elapsed_time(*end);
    }
    for (auto& [start, end] : timers_->compute) {
      end->synchronize();
      stats_.compute_ms += start->elapsed_time(*end);
    }
    if (timers_->span_start && timers_->span_end) {
      timers_->span_end->synchronize();
      stats_.span_ms = timers_->span_start->elapsed_time(*timers_->span_end);
    }
    timers_->clear();
  }
#endif
  return stats_;
}

PipelineRunner::PipelineRunner(Comm& world, ShardedModel& model, int rank, int replicas,
                               int replica, PipeSchedule kind, const PipeShape& shape,
                               at::ScalarType compute_dtype)
    : world_(world),
      model_(model),
      rank_(rank),
      replicas_(replicas),
      replica_(replica),
      kind_(kind),
      shape_(shape),
      compute_dtype_(compute_dtype) {
  check_pipe_shape(kind, shape);
  FABKIT_ENFORCE(pipe_tags_fit(shape), "pipeline tags exceed the comm backend's range");
  FABKIT_ENFORCE(model.chunks() == shape.chunks, "the model's chunks do not match the schedule's");
  // Every rank generates every rank's list (deterministic) and checks them together: a list that
  // could deadlock or skip a micro-batch is refused here, before any transfer.
  const auto all = make_pipe_schedules(kind, shape);
  const std::string bad = validate_pipe_schedules(all, shape);
  FABKIT_ENFORCE(bad.empty(), "pipeline schedule " + to_string(kind) + " is invalid: " + bad);
  actions_ = all.at(static_cast<size_t>(rank));
  // Each computation's send, posted as soon as the computation ends rather than where the list
  // has it: an interleaved list may put a send after the next computation (8 of 112 at P = 4,
  // M = 8, V = 2), which would hold the receiver for a whole computation. The lists keep a rank's
  // sends to each peer in the order of their computations (pipeline_schedule_test.cc), so this
  // does not reorder a pair's transfers; still, only where they are matched by tag (Gloo): NCCL
  // matches a pair's calls by order, so there the sends go in the list's order, the receiver's.
  early_send_.assign(actions_.size(), -1);
  for (size_t i = 0; i < actions_.size() && world_.backend() == "gloo"; ++i) {
    const PipeOp op = actions_[i].op;
    const PipeOp send = op == PipeOp::kForward ? PipeOp::kSendActivation
                        : op == PipeOp::kBackward || op == PipeOp::kBackwardInput
                            ? PipeOp::kSendGrad
                            : op;
    if (send == op) continue;
    for (size_t j = i + 1; j < actions_.size(); ++j) {
      if (actions_[j].op == send && actions_[j].micro_batch == actions_[i].micro_batch &&
          actions_[j].chunk == actions_[i].chunk) {
        early_send_[i] = static_cast<int>(j);
        break;
      }
    }
  }
#if FABKIT_TORCH_CUDA
  if (model_.device().is_cuda()) timers_ = std::make_unique<DeviceTimers>();
#endif
}

bool PipelineRunner::holds_loss() const { return rank_ == shape_.ranks - 1; }

at::Tensor PipelineRunner::recv_tensor(const std::vector<int64_t>& shape, int src, int tag) {
  at::Tensor buf =
      torch::empty(shape, torch::TensorOptions(torch::kFloat32).device(model_.device()));
#if FABKIT_TORCH_CUDA
  if (buf.is_cuda()) {
    auto start = DeviceTimers::record_now(buf.device().index());
    world_.recv(buf.data_ptr<float>(), static_cast<size_t>(buf.numel()), src, tag);
    // After wait(): reached when the received data is there.
    timers_->recv.emplace_back(std::move(start), DeviceTimers::record_now(buf.device().index()));
    return buf.to(compute_dtype_);
  }
#endif
  const auto t0 = std::chrono::steady_clock::now();
  world_.recv(buf.data_ptr<float>(), static_cast<size_t>(buf.numel()), src, tag);
  stats_.recv_wait_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return buf.to(compute_dtype_);
}

void PipelineRunner::send_tensor(const at::Tensor& t, int dst, int tag, size_t list_index) {
  // A copy of its own even when t is fp32 already: the sender goes on and may free t's storage.
  at::Tensor wire =
      t.detach().to(torch::kFloat32, /*non_blocking=*/false, /*copy=*/true).contiguous();
  CommRequestPtr r =
      world_.send_async(wire.data_ptr<float>(), static_cast<size_t>(wire.numel()), dst, tag);
  stats_.bytes_sent += wire.numel() * static_cast<int64_t>(sizeof(float));
  sends_.push_back({std::move(wire), std::move(r), list_index});
}

void PipelineRunner::retire_sends(size_t list_index) {
  // Only sends the list has reached may be waited for: under rendezvous semantics they completed
  // before this point (the lists are valid so), so waiting cannot deadlock; a send posted early,
  // whose place in the list is still ahead, may wait on its receiver's progress past here.
  auto reached = [&](const PendingSend& p) { return p.list_index <= list_index; };
  while (std::count_if(sends_.begin(), sends_.end(), reached) >
         static_cast<std::ptrdiff_t>(kSendsInFlight)) {
    auto oldest = std::find_if(sends_.begin(), sends_.end(), reached);
    oldest->request->wait();
    sends_.erase(oldest);
  }
}

void PipelineRunner::finish_sends() {
  while (!sends_.empty()) {
    sends_.front().request->wait();
    sends_.pop_front();
  }
}

at::Tensor PipelineRunner::run_step(
    const std::function<void(int)>& load,
    const std::function<std::vector<int64_t>(int)>& activation_shape, double loss_scale) {
  stats_ = PipelineStepStats{};
  if (timers_) timers_->clear();  // a step whose figures nobody asked for
  const int last_stage = shape_.virtual_stages() - 1;
  const int64_t base = memory_in_use();
  const bool on_device = timers_ != nullptr;
  [[maybe_unused]] const c10::DeviceIndex device = model_.device().index();
  // A computation, timed: host clock on CPU (the work is done when the call returns), events on
  // the compute stream on a GPU (the host only queues it).
  auto timed = [&](const std::function<void()>& work) {
#if FABKIT_TORCH_CUDA
    if (on_device) {
      auto start = DeviceTimers::record_now(device);
      work();
      timers_->compute.emplace_back(std::move(start), DeviceTimers::record_now(device));
      return;
    }
#endif
    const auto t0 = std::chrono::steady_clock::now();
    work();
    stats_.compute_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  struct InFlight {
    at::Tensor input, output, grad_output;
    std::unique_ptr<WeightGradStore> weights;  // a split backward's W pass, between B and W
  };
  std::map<std::pair<int, int>, InFlight> mb;  // by (micro-batch, chunk)
  at::Tensor loss = torch::zeros({}, torch::TensorOptions(torch::kDouble).device(model_.device()));
  int live = 0;
  const auto span_t0 = std::chrono::steady_clock::now();
#if FABKIT_TORCH_CUDA
  if (on_device) timers_->span_start = DeviceTimers::record_now(device);
#endif
  std::vector<bool> posted(actions_.size(), false);
  // Posts the send at list index j (an activation or an input gradient, now computed).
  auto post = [&](size_t j) {
    const PipeAction& a = actions_[j];
    InFlight& f = mb[{a.micro_batch, a.chunk}];
    const PipePeer p = pipe_peer(shape_, rank_, a);
    const int tag = pipe_tag(shape_, a.op, a.micro_batch, p.boundary);
    if (a.op == PipeOp::kSendActivation) {
      send_tensor(f.output, world_rank(p.rank), tag, j);
    } else {
      FABKIT_ENFORCE(f.input.defined() && f.input.grad().defined(), "no input gradient to send");
      send_tensor(f.input.grad(), world_rank(p.rank), tag, j);
      f.input = at::Tensor();
    }
    posted[j] = true;
  };
  for (size_t i = 0; i < actions_.size(); ++i) {
    const PipeAction& a = actions_[i];
    InFlight& f = mb[{a.micro_batch, a.chunk}];
    const int stage = a.chunk * shape_.ranks + rank_;  // the virtual stage
    const bool last = stage == last_stage;
    switch (a.op) {
      case PipeOp::kRecvActivation: {
        const PipePeer p = pipe_peer(shape_, rank_, a);
        f.input = recv_tensor(activation_shape(a.micro_batch), world_rank(p.rank),
                              pipe_tag(shape_, a.op, a.micro_batch, p.boundary))
                      .requires_grad_(true);
        break;
      }
      case PipeOp::kForward:
        load(a.micro_batch);
        timed([&] { f.output = model_.forward_keep(f.input, a.chunk); });
        if (last) loss.add_(f.output.detach().to(torch::kDouble));
        stats_.peak_in_flight = std::max(stats_.peak_in_flight, ++live);
        note_memory(base);
        break;
      case PipeOp::kSendActivation:
      case PipeOp::kSendGrad:
        if (!posted[i]) post(i);
        retire_sends(i);
        break;
      case PipeOp::kRecvGrad: {
        const PipePeer p = pipe_peer(shape_, rank_, a);
        f.grad_output = recv_tensor(f.output.sizes().vec(), world_rank(p.rank),
                                    pipe_tag(shape_, a.op, a.micro_batch, p.boundary));
        break;
      }
      case PipeOp::kBackward:
        FABKIT_ENFORCE(last || f.grad_output.defined(), "backward before its gradient arrived");
        timed([&] {
          model_.backward_kept(f.output, last ? at::Tensor() : f.grad_output, loss_scale, a.chunk);
        });
        f.output = f.grad_output = at::Tensor();
        --live;
        break;
      case PipeOp::kBackwardInput:
        FABKIT_ENFORCE(last || f.grad_output.defined(), "backward before its gradient arrived");
        f.weights = std::make_unique<WeightGradStore>();
        timed([&] {
          WeightGradStore::Scope deferring(*f.weights);
          model_.backward_input(f.output, last ? at::Tensor() : f.grad_output, loss_scale);
        });
        f.output = f.grad_output = at::Tensor();
        note_memory(base);
        break;
      case PipeOp::kBackwardWeight:
        FABKIT_ENFORCE(f.weights != nullptr, "weight pass before its input pass");
        timed([&] {
          f.weights->flush();
          model_.finish_backward(a.chunk);
        });
        f.weights.reset();
        --live;
        break;
    }
    if (early_send_[i] >= 0) post(static_cast<size_t>(early_send_[i]));
  }
  finish_sends();
#if FABKIT_TORCH_CUDA
  if (on_device) timers_->span_end = DeviceTimers::record_now(device);
#endif
  if (!on_device) {
    stats_.span_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - span_t0)
            .count();
  }
  return loss;
}

double PipelineRunner::run_forward_only(
    int n, const std::function<void(int)>& load,
    const std::function<std::vector<int64_t>(int)>& activation_shape) {
  const int P = shape_.ranks, last_stage = shape_.virtual_stages() - 1;
  double sum = 0.0;
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < shape_.chunks; ++c) {
      const int stage = c * P + rank_;
      at::Tensor x;
      if (stage > 0) {
        x = recv_tensor(activation_shape(i), world_rank((rank_ + P - 1) % P),
                        pipe_tag(shape_, PipeOp::kRecvActivation, i, stage - 1));
      }
      load(i);
      at::Tensor out = model_.forward_only(x, c);
      if (stage < last_stage) {
        send_tensor(out, world_rank((rank_ + 1) % P),
                    pipe_tag(shape_, PipeOp::kSendActivation, i, stage), 0);
        finish_sends();  // validation hands each micro-batch on one at a time
      } else {
        sum += out.item<double>();
      }
    }
  }
  return sum;
}

}  // namespace fabkit::trainer
