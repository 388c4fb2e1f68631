#include "trainer/parallel/sharded_model.h"

#include <torch/torch.h>

#include <algorithm>

#include "common/errors.h"
#include "trainer/parallel/grad_sum.h"

namespace fabkit::trainer {

ShardedModel::ShardedModel(Comm& comm, std::vector<UnitParams> units, std::vector<Stage> stages,
                           bool recompute, at::ScalarType compute_dtype, std::optional<at::Device> tensor_device)
    : comm_(comm),
      units_(std::move(units)),
      stages_(std::move(stages)),
      recompute_(recompute),
      compute_dtype_(compute_dtype),
      tensor_device_(tensor_device) {
  torch::NoGradGuard no_grad;
  for (const auto& u : units_) {
    std::vector<ParamSlot> slots;
    for (const auto& [name, t] : u.params) {
      if (t.scalar_type() != torch::kFloat32) {
        throw UsageError("sharded training keeps fp32 master weights; parameter " + name + " is " +
                         std::string(c10::toString(t.scalar_type())) + " (load the model with --dtype float32)");
      }
      slots.push_back({name, t.sizes().vec(), 0, 0});
    }
    FlatShard s = make_flat_shard(u.unit, std::move(slots), comm_.rank(), comm_.world_size());
    // Rank 0's values win, so a seeded init or a load that differed per rank cannot split the run.
    // Built and broadcast on the shards' device (NCCL moves device memory without staging).
    at::Tensor flat = torch::zeros({s.shard_numel * s.world_size}, torch::TensorOptions(torch::kFloat32).device(device()));
    for (size_t i = 0; i < u.params.size(); ++i) {
      flat.narrow(0, s.params[i].offset, s.params[i].numel).copy_(u.params[i].second.reshape(-1));
    }
    comm_.broadcast(flat.data_ptr<float>(), static_cast<size_t>(flat.numel()), 0);
    at::Tensor mine = flat.narrow(0, s.begin(), s.shard_numel);
    at::Tensor host_param = torch::from_blob(s.param.data(), {s.shard_numel}, torch::kFloat32);
    host_param.copy_(mine);
    if (tensor_device_) {
      param_t_.push_back(mine.clone());
      grad_t_.push_back(torch::zeros({s.shard_numel}, mine.options()));
      // The gradients live on the device: the host vector would only hold memory.
      s.grad.clear();
      s.grad.shrink_to_fit();
    }
    shards_.push_back(std::move(s));
  }
  gathered_.assign(units_.size(), 0);
  grad_stale_.assign(units_.size(), false);
  grad_sq_.assign(units_.size(), std::nullopt);
  full_.resize(units_.size());
  prefetch_.resize(units_.size());
  gathering_.resize(units_.size());
  for (size_t u = 0; u < units_.size(); ++u) release(u);
  first_stage_.assign(units_.size(), stages_.size());
  for (size_t i = 0; i < stages_.size(); ++i) {
    FABKIT_ENFORCE(stages_[i].unit < units_.size(), "stage names a missing unit");
    first_stage_[stages_[i].unit] = std::min(first_stage_[stages_[i].unit], i);
  }
}

// Two reductions in flight: one travelling while the next stage's backward runs, one being
// filled. More would only hold more gradient buffers alive.
constexpr size_t kReductionsInFlight = 2;

// Mixed precision as FSDP does it: the fp32 shard is cast to the compute dtype BEFORE the
// allgather, so a bf16/fp16 unit moves 2 bytes per parameter instead of 4 (and the fp32 full copy
// is never made). The Comm moves fp32 words; an allgather only copies them, so two 16-bit values
// travel bit for bit in each word (FSDP2 gathers through a uint8 view the same way). Each rank's
// slice is padded to whole words (a zero half-word after an odd shard_numel).
void ShardedModel::start_allgather(size_t u) {
  FlatShard& s = shards_[u];
  at::Tensor param = param_tensor(u);
  Gathering& g = gathering_[u];
  if (compute_dtype_ == torch::kFloat32) {
    g.send = at::Tensor();
    g.words = s.shard_numel;
    full_[u] = torch::empty({s.shard_numel * s.world_size}, param.options());
    record({"allgather", torch::kFloat32, s.shard_numel * s.world_size * 4});
    prefetch_[u] = comm_.allgather_async(
        param.data_ptr<float>(), static_cast<size_t>(s.shard_numel), full_[u].data_ptr<float>());
    return;
  }
  g.words = (s.shard_numel + 1) / 2;
  const auto half = param.options().dtype(compute_dtype_);
  g.send = torch::empty({2 * g.words}, half);
  g.send.narrow(0, 0, s.shard_numel).copy_(param);
  if (2 * g.words != s.shard_numel) g.send.narrow(0, s.shard_numel, 1).zero_();
  full_[u] = torch::empty({2 * g.words * s.world_size}, half);
  record({"allgather", compute_dtype_, full_[u].numel() * full_[u].element_size()});
  prefetch_[u] =
      comm_.allgather_async(static_cast<const float*>(g.send.data_ptr()),
                            static_cast<size_t>(g.words), static_cast<float*>(full_[u].data_ptr()));
}

void ShardedModel::prefetch(size_t u) {
  if (shards_[u].world_size > 1 && gathered_[u] == 0 && !prefetch_[u]) start_allgather(u);
}

void ShardedModel::gather(size_t u) {
  if (gathered_[u]++ > 0) return;  // already live (tied unit, or kept from the forward)
  FlatShard& s = shards_[u];
  if (s.world_size == 1) {
    // One rank holds the whole unit: the model's parameters alias the shard, no allgather copy
    // (measured: a 20 MB alloc + copy per unit per step). Safe because the optimizer only writes
    // the shard after backward, when the unit is released and no graph holds the views.
    full_[u] = param_tensor(u);
    if (compute_dtype_ != torch::kFloat32) full_[u] = full_[u].to(compute_dtype_);
  } else {
    if (!prefetch_[u]) start_allgather(u);
    prefetch_[u]->wait();
    prefetch_[u].reset();
    Gathering& g = gathering_[u];
    g.send = at::Tensor();
    // An odd shard_numel left a pad half-word after each rank's slice: drop them (a copy, only
    // then).
    if (g.words * 2 != s.shard_numel && compute_dtype_ != torch::kFloat32) {
      full_[u] = full_[u]
                     .view({static_cast<int64_t>(s.world_size), 2 * g.words})
                     .narrow(1, 0, s.shard_numel)
                     .reshape({-1});
    }
  }
  for (size_t i = 0; i < s.params.size(); ++i) {
    const auto& slot = s.params[i];
    units_[u].params[i].second.set_data(full_[u].narrow(0, slot.offset, slot.numel).view(slot.shape));
  }
}

void ShardedModel::release(size_t u) {
  if (gathered_[u] > 0 && --gathered_[u] > 0) return;
  gathered_[u] = 0;
  // An empty placeholder keeps the leaf tensor (and its identity in the model) alive without data.
  for (auto& p : units_[u].params) {
    p.second.set_data(torch::empty({0}, torch::TensorOptions(compute_dtype_).device(device())));
  }
  full_[u] = at::Tensor();
}

void ShardedModel::reduce_grads(size_t u) {
  FlatShard& s = shards_[u];
  if (s.world_size == 1 && !fused_step_ && !tensor_device_) {
    store_host_grads(u);  // the host shard, written in one pass with its squared norm
    return;
  }
  // ATen views of the shard's grad so the adds run vectorised (and on the intra-op threads).
  // Fused step: a fresh zeroed buffer takes this step's reduced gradient instead of the shard's.
  at::Tensor shard_grad = fused_step_ ? torch::zeros({s.shard_numel}, param_tensor(u).options()) : grad_tensor(u);
  if (s.world_size == 1) {
    // Nothing to reduce: add each parameter's gradient straight into its slot of the shard
    // (add_ converts a bf16/fp16 gradient to the fp32 shard).
    for (size_t i = 0; i < s.params.size(); ++i) {
      at::Tensor& p = units_[u].params[i].second;
      if (!p.grad().defined()) continue;
      shard_grad.narrow(0, s.params[i].offset, s.params[i].numel).add_(p.grad().reshape(-1));
      p.mutable_grad() = at::Tensor();
    }
    if (fused_step_) apply_fused(u, shard_grad);
    return;
  }
  // The send buffer in the reduce dtype: bf16 halves the bytes, and the cast happens here, once
  // per parameter gradient, never to an fp32 full gradient first.
  at::Tensor full_grad =
      torch::empty({s.shard_numel * s.world_size}, shard_grad.options().dtype(reduce_dtype_));
  bool any = false;
  int64_t covered = 0;  // params are laid out back to back from offset 0
  for (size_t i = 0; i < s.params.size(); ++i) {
    at::Tensor& p = units_[u].params[i].second;
    at::Tensor slot = full_grad.narrow(0, s.params[i].offset, s.params[i].numel);
    if (p.grad().defined()) {
      slot.copy_(p.grad().reshape(-1));  // to the reduce dtype
      p.mutable_grad() = at::Tensor();
      any = true;
    } else {
      slot.zero_();
    }
    covered = s.params[i].offset + s.params[i].numel;
  }
  full_grad.narrow(0, covered, full_grad.numel() - covered).zero_();  // the padding tail
  // Every rank runs the same stages, so `any` agrees across ranks; the collective must not be
  // skipped on one rank only.
  if (!any) {
    if (fused_step_) apply_fused(u, shard_grad);  // zeros, like an untouched gradient shard
    return;
  }
  record({"reduce-scatter", reduce_dtype_, full_grad.numel() * full_grad.element_size()});
  CommRequestPtr r = reduce_dtype_ == torch::kBFloat16
                         ? comm_.reduce_scatter_add_bf16_async(
                               static_cast<const uint16_t*>(full_grad.data_ptr()),
                               static_cast<size_t>(s.shard_numel), shard_grad.data_ptr<float>())
                         : comm_.reduce_scatter_add_async(full_grad.data_ptr<float>(),
                                                          static_cast<size_t>(s.shard_numel),
                                                          shard_grad.data_ptr<float>());
  reductions_.push_back({std::move(r), std::move(full_grad), u, fused_step_ ? shard_grad : at::Tensor()});
  wait_reductions(kReductionsInFlight);
}

void ShardedModel::set_reduce_dtype(at::ScalarType dtype) {
  if (dtype != torch::kFloat32 && dtype != torch::kBFloat16) {
    throw UsageError(std::string("gradients are reduced in float32 or bfloat16, not ") +
                     c10::toString(dtype) + " (--reduce-dtype fp32|bf16)");
  }
  reduce_dtype_ = dtype;
}

void ShardedModel::wait_reductions(size_t keep_in_flight) {
  while (reductions_.size() > keep_in_flight) {
    Reduction& r = reductions_.front();
    r.request->wait();
    if (r.fused_grad.defined()) apply_fused(r.unit, r.fused_grad);
    reductions_.pop_front();
  }
}

at::Tensor ShardedModel::forward_backward(double loss_scale) {
  const size_t n = stages_.size();
  std::vector<at::Tensor> inputs(n), outputs(n);
  std::vector<OffloadedTensor> offloaded(n);  // --offload-activations: the inputs, in host memory
  at::Tensor h;
  for (size_t i = 0; i < n; ++i) {
    const Stage& st = stages_[i];
    gather(st.unit);
    if (i + 1 < n) prefetch(stages_[i + 1].unit);
    at::Tensor x = h.defined() ? h.detach() : h;
    if (recompute_) {
      torch::NoGradGuard no_grad;
      outputs[i] = st.forward(x);
      release(st.unit);
    } else {
      if (x.defined() && x.is_floating_point()) x.requires_grad_(true);
      outputs[i] = st.forward(x);
    }
    if (offloader_ && x.defined() && x.is_floating_point()) {
      offloaded[i] = offloader_->offload(x);
    } else {
      inputs[i] = x;
    }
    h = outputs[i];
  }
  const at::Tensor loss = h.detach().to(torch::kDouble);
  at::Tensor grad_out;
  for (size_t k = n; k-- > 0;) {
    const Stage& st = stages_[k];
    at::Tensor x = offloaded[k].defined() ? offloader_->restore(offloaded[k]) : inputs[k];
    at::Tensor out = outputs[k];
    // The next stage back's input starts its way to the device while this stage computes.
    if (k > 0 && offloader_) offloader_->prefetch(offloaded[k - 1]);
    if (recompute_) {
      gather(st.unit);
      if (k > 0) prefetch(stages_[k - 1].unit);
      if (x.defined() && x.is_floating_point()) x = x.detach().requires_grad_(true);
      out = st.forward(x);
    }
    if (k == n - 1) {
      if (loss_scale == 1.0) {
        torch::autograd::backward({out});
      } else {
        torch::autograd::backward({out}, {torch::full_like(out, loss_scale)});
      }
    } else {
      torch::autograd::backward({out}, {grad_out});
    }
    grad_out = (x.defined() && x.requires_grad()) ? x.grad() : at::Tensor();
    inputs[k] = outputs[k] = at::Tensor();
    if (k == first_stage_[st.unit]) reduce_grads(st.unit);
    release(st.unit);
  }
  wait_reductions(0);
  return loss;
}

double ShardedModel::forward_loss() {
  torch::NoGradGuard no_grad;
  at::Tensor h;
  for (size_t i = 0; i < stages_.size(); ++i) {
    gather(stages_[i].unit);
    if (i + 1 < stages_.size()) prefetch(stages_[i + 1].unit);
    h = stages_[i].forward(h);
    release(stages_[i].unit);
  }
  return h.item<double>();
}

std::pair<size_t, size_t> ShardedModel::chunk_range(int chunk) const {
  FABKIT_ENFORCE(chunk >= 0 && static_cast<size_t>(chunk) < chunk_first_.size(),
                 "no such model chunk");
  const size_t c = static_cast<size_t>(chunk);
  return {chunk_first_[c], c + 1 < chunk_first_.size() ? chunk_first_[c + 1] : stages_.size()};
}

void ShardedModel::set_chunks(std::vector<size_t> first_stages) {
  FABKIT_ENFORCE(!first_stages.empty() && first_stages[0] == 0,
                 "the first chunk starts at stage 0");
  for (size_t i = 1; i < first_stages.size(); ++i) {
    FABKIT_ENFORCE(first_stages[i] > first_stages[i - 1] && first_stages[i] < stages_.size(),
                   "model chunks must be non-empty runs of stages");
  }
  chunk_first_ = std::move(first_stages);
}

at::Tensor ShardedModel::forward_keep(const at::Tensor& input, int chunk) {
  const auto [begin, end] = chunk_range(chunk);
  at::Tensor h = input;
  for (size_t i = begin; i < end; ++i) {
    gather(stages_[i].unit);
    if (i + 1 < end) prefetch(stages_[i + 1].unit);
    h = stages_[i].forward(h);
  }
  return h;
}

at::Tensor ShardedModel::forward_only(const at::Tensor& input, int chunk) {
  torch::NoGradGuard no_grad;
  const auto [begin, end] = chunk_range(chunk);
  at::Tensor h = input;
  for (size_t i = begin; i < end; ++i) {
    gather(stages_[i].unit);
    if (i + 1 < end) prefetch(stages_[i + 1].unit);
    h = stages_[i].forward(h);
    release(stages_[i].unit);
  }
  return h;
}

void ShardedModel::backward_input(const at::Tensor& output, const at::Tensor& grad_output,
                                  double loss_scale) {
  if (grad_output.defined()) {
    torch::autograd::backward({output}, {grad_output});
  } else if (loss_scale == 1.0) {
    torch::autograd::backward({output});
  } else {
    torch::autograd::backward({output}, {torch::full_like(output, loss_scale)});
  }
}

void ShardedModel::finish_backward(int chunk) {
  // Every unit's gradient is complete once the whole graph ran: reduce each once, last stage
  // first (the order every replica uses, so the collectives match).
  const auto [begin, end] = chunk_range(chunk);
  std::vector<bool> reduced(units_.size(), false);
  for (size_t k = end; k-- > begin;) {
    const size_t u = stages_[k].unit;
    if (!reduced[u]) reduce_grads(u);
    reduced[u] = true;
  }
  for (size_t k = end; k-- > begin;) release(stages_[k].unit);
  wait_reductions(0);
}

void ShardedModel::backward_kept(const at::Tensor& output, const at::Tensor& grad_output,
                                 double loss_scale, int chunk) {
  backward_input(output, grad_output, loss_scale);
  finish_backward(chunk);
}

void ShardedModel::prefetch_first_stage() {
  if (!stages_.empty()) prefetch(stages_[0].unit);
}

void ShardedModel::enable_fused_step(UnitStep apply) {
  fused_step_ = std::move(apply);
  for (auto& s : shards_) {
    s.grad.clear();
    s.grad.shrink_to_fit();
  }
  grad_t_.assign(grad_t_.size(), at::Tensor());
}

void ShardedModel::record(const CollectiveRecord& r) const {
  if (observer_) observer_(r);
}

void ShardedModel::apply_fused(size_t u, const at::Tensor& grad) { fused_step_(u, grad.data_ptr<float>()); }

void ShardedModel::enable_activation_offload() {
  FABKIT_ENFORCE(recompute_, "activation offload needs recompute: only each stage's input is kept then");
  offloader_ = std::make_unique<ActivationOffloader>(device());
}

int64_t ShardedModel::state_bytes() const {
  int64_t b = 0;
  for (size_t u = 0; u < shards_.size(); ++u) {
    const bool grads = fused_step_ ? false : tensor_device_ ? grad_t_[u].defined() : !shards_[u].grad.empty();
    b += shards_[u].shard_numel * static_cast<int64_t>(sizeof(float)) * (grads ? 2 : 1);
  }
  return b;
}

void ShardedModel::zero_grad() {
  if (fused_step_) return;
  if (!tensor_device_) {
    for (size_t u = 0; u < shards_.size(); ++u) {
      FlatShard& s = shards_[u];
      grad_sq_[u] = std::nullopt;
      // A whole unit on this rank: its first reduction overwrites the shard instead (see
      // store_host_grads), so the zeros are never written only to be added to.
      grad_stale_[u] = s.world_size == 1;
      if (!grad_stale_[u]) std::fill(s.grad.begin(), s.grad.end(), 0.0f);
    }
    return;
  }
  for (auto& g : grad_t_) g.zero_();
}

void ShardedModel::store_host_grads(size_t u) {
  FlatShard& s = shards_[u];
  float* shard = s.grad.data();
  const bool overwrite = grad_stale_[u];
  double sq = 0.0;
  int64_t covered = 0;  // params are laid out back to back from offset 0
  for (size_t i = 0; i < s.params.size(); ++i) {
    at::Tensor& p = units_[u].params[i].second;
    const ParamSlot& slot = s.params[i];
    float* dst = shard + slot.offset;
    covered = slot.offset + slot.numel;
    if (!p.grad().defined()) {
      if (overwrite) {
        std::fill(dst, dst + slot.numel, 0.0f);
      } else {
        sq += sum_squares(dst, slot.numel);
      }
      continue;
    }
    const at::Tensor g = p.grad().reshape(-1);
    if (g.scalar_type() == at::kFloat && g.device().is_cpu() && g.is_contiguous()) {
      sq += store_grad_sum_squares(dst, g.data_ptr<float>(), slot.numel, overwrite);
    } else {
      // A bf16/fp16 gradient: ATen converts it to the fp32 slot.
      at::Tensor view = torch::from_blob(dst, {slot.numel}, torch::kFloat32);
      if (overwrite) {
        view.copy_(g);
      } else {
        view.add_(g);
      }
      sq += sum_squares(dst, slot.numel);
    }
    p.mutable_grad() = at::Tensor();
  }
  if (overwrite) std::fill(shard + covered, shard + s.shard_numel, 0.0f);  // the padding tail
  grad_stale_[u] = false;
  grad_sq_[u] = sq;
}

void ShardedModel::settle_grads(bool may_write) const {
  for (size_t u = 0; u < shards_.size(); ++u) {
    if (may_write) grad_sq_[u] = std::nullopt;
    if (!grad_stale_[u]) continue;
    auto& s = const_cast<FlatShard&>(shards_[u]);
    std::fill(s.grad.begin(), s.grad.end(), 0.0f);
    grad_stale_[u] = false;
  }
}

std::optional<double> ShardedModel::local_grad_sq_norm() const {
  double sq = 0.0;
  for (size_t u = 0; u < shards_.size(); ++u) {
    if (!grad_sq_[u]) return std::nullopt;
    sq += *grad_sq_[u];
  }
  return sq;
}

// Host mode: views made on each use, never kept: a resume may replace a shard's vectors (resharding
// assigns new ones), and a kept view would point into the freed buffer.
at::Tensor ShardedModel::param_tensor(size_t u) const {
  if (tensor_device_) return param_t_[u];
  auto& s = const_cast<FlatShard&>(shards_[u]);
  return torch::from_blob(s.param.data(), {s.shard_numel}, torch::kFloat32);
}

at::Tensor ShardedModel::grad_tensor(size_t u) const {
  if (fused_step_) return at::Tensor();  // no gradient shards are kept
  if (tensor_device_) return grad_t_[u];
  settle_grads(/*may_write=*/true);  // a writable view of the shard
  auto& s = const_cast<FlatShard&>(shards_[u]);
  return torch::from_blob(s.grad.data(), {s.shard_numel}, torch::kFloat32);
}

std::vector<at::Tensor> ShardedModel::param_tensors() const {
  std::vector<at::Tensor> out;
  for (size_t u = 0; u < shards_.size(); ++u) out.push_back(param_tensor(u));
  return out;
}

std::vector<at::Tensor> ShardedModel::grad_tensors() const {
  std::vector<at::Tensor> out;
  for (size_t u = 0; u < shards_.size(); ++u) out.push_back(grad_tensor(u));
  return out;
}

void ShardedModel::sync_params_to_host() {
  if (!tensor_device_) return;
  for (size_t u = 0; u < shards_.size(); ++u) {
    torch::from_blob(shards_[u].param.data(), {shards_[u].shard_numel}, torch::kFloat32).copy_(param_t_[u]);
  }
}

void ShardedModel::sync_params_from_host() {
  if (!tensor_device_) return;
  for (size_t u = 0; u < shards_.size(); ++u) {
    param_t_[u].copy_(torch::from_blob(shards_[u].param.data(), {shards_[u].shard_numel}, torch::kFloat32));
  }
}

std::vector<float> ShardedModel::gather_full(size_t u) {
  const FlatShard& s = shards_[u];
  at::Tensor param = param_tensor(u);
  at::Tensor full = torch::empty({s.shard_numel * s.world_size}, param.options());
  comm_.allgather(param.data_ptr<float>(), static_cast<size_t>(s.shard_numel), full.data_ptr<float>());
  full = full.narrow(0, 0, s.total_numel).cpu().contiguous();
  return std::vector<float>(full.data_ptr<float>(), full.data_ptr<float>() + s.total_numel);
}

int64_t ShardedModel::unsharded_param_numel() const {
  int64_t n = 0;
  for (const auto& s : shards_) n += s.total_numel;
  return n;
}

}  // namespace fabkit::trainer
