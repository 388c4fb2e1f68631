// The optimizer step as ATen ops on the shards' tensors: GPU training, where the shards live on
// the device (parallel/sharded_model.h, tensor mode). The host loops (optimizer.h) stay the CPU
// default; `fabtrain --step-impl tensor` runs these on CPU, which is how they are tested against
// the loops on machines without a GPU.
//
// Same maths and the same checkpoint arrays as the host versions (adamw_reshard_state,
// adafactor_layout.h), so a checkpoint written on GPUs resumes on CPUs and back.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <vector>

#include "trainer/optim/optimizer.h"

namespace fabkit::trainer {

// params[u], grads[u]: fp32 [shard_numel] tensors of unit u on one device, aliased (the
// ShardedModel's own); step(shards, lr) updates params[u] and ignores the shards' host vectors.
// AdamW runs torch's fused kernel (at::_fused_adamw_, as torch.optim.AdamW(fused=True)): one
// launch for every unit on CUDA, a vectorised loop on CPU.
std::unique_ptr<ShardOptimizer> make_tensor_adamw(const std::vector<FlatShard>& shards,
                                                  std::vector<at::Tensor> params,
                                                  std::vector<at::Tensor> grads,
                                                  const AdamWOptions& o);
// Adafactor with the host version's sharded statistics; sum_across_shards receives device
// pointers when the tensors are on a GPU (the NCCL comm reduces them in place).
std::unique_ptr<ShardOptimizer> make_tensor_adafactor(const std::vector<FlatShard>& shards,
                                                      std::vector<at::Tensor> params,
                                                      std::vector<at::Tensor> grads,
                                                      const AdafactorOptions& o,
                                                      ShardSum sum_across_shards);

// The loop's other shard-wide operations (loss_scale.h, clip_grad_norm) on the gradient tensors.
bool tensor_grads_finite(const std::vector<at::Tensor>& grads);
void tensor_scale_grads(const std::vector<at::Tensor>& grads, float factor);
double tensor_clip_grad_norm(const std::vector<at::Tensor>& grads, double max_norm,
                             const std::function<void(double*, size_t)>& sum_across_shards);
// The same in two halves that never read a value back to the host (no sync on a GPU): this
// rank's squared gradient norm as a double scalar on the grads' device, and the clip by the
// world's norm (a device scalar), coefficient min(1, max_norm / (norm + 1e-6)) applied on the
// device.
at::Tensor tensor_grad_sq_norm(const std::vector<at::Tensor>& grads);
void tensor_clip_by_norm(const std::vector<at::Tensor>& grads, const at::Tensor& norm,
                         double max_norm);

}  // namespace fabkit::trainer
