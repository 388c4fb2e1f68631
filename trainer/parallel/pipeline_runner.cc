#include "trainer/parallel/pipeline_runner.h"

#include <torch/torch.h>

#include <malloc.h>

#include <chrono>

#include "common/errors.h"

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
  // Timing events (the default kind disables timing), one pair per receive of the step.
  std::vector<std::pair<std::unique_ptr<at::cuda::CUDAEvent>, std::unique_ptr<at::cuda::CUDAEvent>>>
      pairs;
};
#else
struct PipelineRunner::DeviceTimers {};
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

const PipelineStepStats& PipelineRunner::stats() {
#if FABKIT_TORCH_CUDA
  if (timers_) {
    for (auto& [start, end] : timers_->pairs) {
      end->synchronize();
      stats_.recv_wait_ms += start->elapsed_time(*end);
    }
    timers_->pairs.clear();
  }
#endif
  return stats_;
}

PipelineRunner::PipelineRunner(Comm& world, ShardedModel& model, int stage, int stages,
                               int prev_rank, int next_rank, PipeSchedule kind, int micro_batches,
                               at::ScalarType compute_dtype)
    : world_(world),
      model_(model),
      stage_(stage),
      stages_(stages),
      prev_rank_(prev_rank),
      next_rank_(next_rank),
      micro_batches_(micro_batches),
      compute_dtype_(compute_dtype),
      actions_(make_pipe_schedule(kind, stage, stages, micro_batches)) {}

at::Tensor PipelineRunner::recv_tensor(const std::vector<int64_t>& shape, int src, int tag) {
  at::Tensor buf =
      torch::empty(shape, torch::TensorOptions(torch::kFloat32).device(model_.device()));
#if FABKIT_TORCH_CUDA
  if (buf.is_cuda()) {
    if (!timers_) timers_ = std::make_unique<DeviceTimers>();
    const auto stream = c10::cuda::getCurrentCUDAStream(buf.device().index());
    auto start = std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault);
    auto end = std::make_unique<at::cuda::CUDAEvent>(cudaEventDefault);
    start->record(stream);
    world_.recv(buf.data_ptr<float>(), static_cast<size_t>(buf.numel()), src, tag);
    end->record(stream);  // after wait(): reached when the received data is there
    timers_->pairs.emplace_back(std::move(start), std::move(end));
    return buf.to(compute_dtype_);
  }
#endif
  const auto t0 = std::chrono::steady_clock::now();
  world_.recv(buf.data_ptr<float>(), static_cast<size_t>(buf.numel()), src, tag);
  stats_.recv_wait_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return buf.to(compute_dtype_);
}

void PipelineRunner::send_tensor(const at::Tensor& t, int dst, int tag) {
  at::Tensor wire = t.detach().to(torch::kFloat32).contiguous();
  world_.send(wire.data_ptr<float>(), static_cast<size_t>(wire.numel()), dst, tag);
  stats_.bytes_sent += wire.numel() * static_cast<int64_t>(sizeof(float));
}

at::Tensor PipelineRunner::run_step(
    const std::function<void(int)>& load,
    const std::function<std::vector<int64_t>(int)>& activation_shape, double loss_scale) {
  stats_ = PipelineStepStats{};
  if (timers_) timers_->pairs.clear();  // a step whose figures nobody asked for
  const bool first = stage_ == 0, last = stage_ == stages_ - 1;
  const int64_t heap0 = memory_in_use();
  struct InFlight {
    at::Tensor input, output, grad_output;
  };
  std::vector<InFlight> mb(static_cast<size_t>(micro_batches_));
  at::Tensor loss = torch::zeros({}, torch::TensorOptions(torch::kDouble).device(model_.device()));
  int live = 0;
  for (const PipeAction& a : actions_) {
    InFlight& f = mb.at(static_cast<size_t>(a.micro_batch));
    const int tag =
        a.op == PipeOp::kForward || a.op == PipeOp::kBackward ? 0 : pipe_tag(a.op, a.micro_batch);
    switch (a.op) {
      case PipeOp::kRecvActivation:
        f.input =
            recv_tensor(activation_shape(a.micro_batch), prev_rank_, tag).requires_grad_(true);
        break;
      case PipeOp::kForward: {
        load(a.micro_batch);
        f.output = model_.forward_keep(f.input);
        if (last) loss.add_(f.output.detach().to(torch::kDouble));
        stats_.peak_in_flight = std::max(stats_.peak_in_flight, ++live);
        stats_.activation_bytes_peak =
            std::max(stats_.activation_bytes_peak, memory_in_use() - heap0);
        break;
      }
      case PipeOp::kSendActivation:
        send_tensor(f.output, next_rank_, tag);
        break;
      case PipeOp::kRecvGrad:
        f.grad_output = recv_tensor(f.output.sizes().vec(), next_rank_, tag);
        break;
      case PipeOp::kBackward:
        FABKIT_ENFORCE(last || f.grad_output.defined(), "backward before its gradient arrived");
        model_.backward_kept(f.output, last ? at::Tensor() : f.grad_output, loss_scale);
        f.output = f.grad_output = at::Tensor();
        --live;
        break;
      case PipeOp::kSendGrad:
        FABKIT_ENFORCE(!first && f.input.grad().defined(), "no input gradient to send");
        send_tensor(f.input.grad(), prev_rank_, tag);
        f.input = at::Tensor();
        break;
    }
  }
  return loss;
}

double PipelineRunner::run_forward_only(
    int n, const std::function<void(int)>& load,
    const std::function<std::vector<int64_t>(int)>& activation_shape) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) {
    at::Tensor x;
    if (stage_ > 0)
      x = recv_tensor(activation_shape(i), prev_rank_, pipe_tag(PipeOp::kRecvActivation, i));
    load(i);
    at::Tensor out = model_.forward_only(x);
    if (stage_ < stages_ - 1) {
      send_tensor(out, next_rank_, pipe_tag(PipeOp::kSendActivation, i));
    } else {
      sum += out.item<double>();
    }
  }
  return sum;
}

}  // namespace fabkit::trainer
