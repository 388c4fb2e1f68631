#include <chrono>
#include <cstdio>

#include "fabkit/config.h"
#include "probes/gpu/gpu_facts.h"

#if FABKIT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fabkit::probes {
namespace {

#if FABKIT_HAVE_CUDA
std::string version_text(int v) {  // CUDA encodes 12040 as 12.4
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

void query_cuda(GpuFacts& f) {
  f.built_with_cuda = true;
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) f.runtime = version_text(v);
  if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0) f.driver = version_text(v);
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    f.error_name = cudaGetErrorName(err);
    f.error_string = cudaGetErrorString(err);
    return;
  }
  f.count = count;
  for (int i = 0; i < count; ++i) {
    CudaDevice d;
    d.index = i;
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) == cudaSuccess) {
      d.name = p.name;
      d.memory_bytes = p.totalGlobalMem;
      d.cc_major = p.major;
      d.cc_minor = p.minor;
      char bus[32];
      snprintf(bus, sizeof bus, "%04x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
      d.bus_id = bus;
    }
    f.devices.push_back(d);
  }
}
#endif

}  // namespace

GpuFacts gather_gpu(const ProbeContext& ctx) {
  GpuFacts f;
  f.cuda_visible_devices = ctx.env.get("CUDA_VISIBLE_DEVICES");
  auto start = std::chrono::steady_clock::now();
#if FABKIT_HAVE_CUDA
  // Under --sysroot the CUDA runtime would still describe this machine, not the fixture.
  if (ctx.roots.live) {
    query_cuda(f);
  } else {
    f.built_with_cuda = true;
    f.skipped = true;
  }
#endif
  f.query_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return f;
}

}  // namespace fabkit::probes
