#include "trainer/app/batch_copy.h"

#include <ATen/ATen.h>

namespace fabkit::trainer {

BatchCopy batch_copy_for(const at::Device& device) {
  const bool cuda = device.is_cuda();
  return {cuda, cuda};
}

at::Tensor copy_to_device(const at::Tensor& host, const at::Device& device, const BatchCopy& how) {
  if (host.device() == device) return host;
  const at::Tensor src = how.pin && !host.is_pinned() ? host.pin_memory() : host;
  return src.to(device, /*non_blocking=*/how.non_blocking);
}

}  // namespace fabkit::trainer
