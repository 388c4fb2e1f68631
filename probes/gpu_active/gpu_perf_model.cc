#include "probes/gpu_active/gpu_perf_model.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace fabkit::probes {
namespace {

std::string fmt(double v, int digits) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

std::string percent(double f) { return fmt(f * 100, 0) + "%"; }

// Sources, one per family (dense BF16 = the datasheet's sparsity figure halved where the sheet
// prints only that one, as its footnote "with sparsity" says):
//  [H100]  NVIDIA H100 Tensor Core GPU datasheet,
//          https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet
//          SXM: BF16 1,979* TFLOPS, 80 GB 3.35 TB/s, NVLink 900 GB/s, PCIe Gen5 128 GB/s;
//          NVL: BF16 1,671*, 94 GB 3.9 TB/s, NVLink 600 GB/s, PCIe Gen5.
//          Dense 989.4 for SXM also in https://glennklockwood.com/garden/processors/h100
//  [H100P] NVIDIA H100 PCIe product brief PB-11133-001 (Nov 2022) and the datasheet above:
//          BF16 1,513* TFLOPS, 80 GB HBM2e 2.0 TB/s, Gen5 x16 card, NVLink bridge 600 GB/s.
//  [H200]  https://www.nvidia.com/en-us/data-center/h200/ : SXM BF16 1,979*, NVL 1,671*; both
//          141 GB 4.8 TB/s, NVLink 900 GB/s (NVL: 2- or 4-way bridge), PCIe Gen5 128 GB/s.
//  [A100]  NVIDIA A100 datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/
//          a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf : BF16 312 (624*);
//          40 GB 1,555 GB/s; 80 GB PCIe 1,935 GB/s; 80 GB SXM 2,039 GB/s; NVLink 600 GB/s
//          (PCIe: bridge for 2 GPUs); PCIe Gen4 64 GB/s.
//  [B200]  https://www.nvidia.com/en-us/data-center/hgx/ (HGX B200: FP16/BF16 36 PFLOPS* for 8
//          GPUs = 2,250 dense each; NVLink 1.8 TB/s per GPU) and
//          https://glennklockwood.com/garden/processors/B200 (2,250 dense BF16 at 1,000 W,
//          8 TB/s HBM3e, PCIe Gen6 host interface).
//  [GB200] https://www.nvidia.com/en-us/data-center/gb200-nvl72/ (72 GPUs: FP16/BF16 360 PFLOPS*
//          = 2,500 dense each, HBM3e 576 TB/s = 8 TB/s each, NVLink 130 TB/s = 1.8 TB/s each);
//          the host link is NVLink-C2C to the Grace CPU, not PCIe.
//  [L40S]  https://www.nvidia.com/en-us/data-center/l40s/ : BF16 362.05 (733*), 864 GB/s,
//          PCIe Gen4 x16, no NVLink.  [L40] https://www.nvidia.com/en-us/data-center/l40/ :
//          BF16 181.05 (362.1*), 864 GB/s, Gen4 x16.
//  [L4]    https://www.nvidia.com/en-us/data-center/l4/ : BF16 242* TFLOPS, 300 GB/s, Gen4 x16.
//  [A10]   https://www.nvidia.com/en-us/data-center/products/a10-gpu/ : BF16 125 (250*),
//          600 GB/s, Gen4 x16.  [A30] https://www.nvidia.com/en-us/data-center/products/a30-gpu/
//          : BF16 165 (330*), 933 GB/s, Gen4 x16, NVLink bridge 200 GB/s.
// Device names: what nvidia-smi -L / NVML print for each board (GPU lists in public NCCL and
// nvidia-smi logs, e.g. "NVIDIA H100 80GB HBM3" for the SXM5 part, "NVIDIA A100-SXM4-80GB").
std::vector<GpuSku> build_table() {
  std::vector<GpuSku> t;
  // id, label, names, bf16 dense, HBM GB/s, PCIe gen, width, NVLink/dir, all-to-all, unmeasured
  t.push_back({"h100-sxm5-80gb",
               "H100 SXM5 80GB",
               {"H100 80GB HBM3", "H100 SXM5 80GB"},
               989.4,
               3350,
               5,
               16,
               450,
               true,
               false});  // [H100]
  t.push_back({"h100-pcie-80gb",
               "H100 PCIe 80GB",
               {"H100 PCIe"},
               756.5,
               2000,
               5,
               16,
               0,
               false,
               true});  // [H100P]
  t.push_back({"h100-nvl-94gb",
               "H100 NVL 94GB",
               {"H100 NVL"},
               835.5,
               3900,
               5,
               16,
               0,
               false,
               true});  // [H100]
  t.push_back({"h200-sxm-141gb",
               "H200 SXM 141GB",
               {"H200", "H200 SXM 141GB"},
               989.4,
               4800,
               5,
               16,
               450,
               true,
               false});  // [H200]
  t.push_back({"h200-nvl-141gb",
               "H200 NVL 141GB",
               {"H200 NVL"},
               835.5,
               4800,
               5,
               16,
               0,
               false,
               true});  // [H200]
  t.push_back({"a100-sxm4-40gb",
               "A100 SXM4 40GB",
               {"A100-SXM4-40GB"},
               312,
               1555,
               4,
               16,
               300,
               true,
               false});  // [A100]
  t.push_back({"a100-sxm4-80gb",
               "A100 SXM4 80GB",
               {"A100-SXM4-80GB"},
               312,
               2039,
               4,
               16,
               300,
               true,
               false});  // [A100]
  t.push_back({"a100-pcie-40gb",
               "A100 PCIe 40GB",
               {"A100-PCIE-40GB", "A100 PCIe 40GB"},
               312,
               1555,
               4,
               16,
               0,
               false,
               false});  // [A100]
  t.push_back({"a100-pcie-80gb",
               "A100 PCIe 80GB",
               {"A100 80GB PCIe", "A100-PCIE-80GB"},
               312,
               1935,
               4,
               16,
               0,
               false,
               false});                                                          // [A100]
  t.push_back({"b200", "B200", {"B200"}, 2250, 8000, 6, 16, 900, true, false});  // [B200]
  t.push_back(
      {"gb200", "GB200 (Blackwell GPU)", {"GB200"}, 2500, 8000, 0, 0, 900, true, true});  // [GB200]
  t.push_back({"l40s", "L40S", {"L40S"}, 362.05, 864, 4, 16, 0, false, true});            // [L40S]
  t.push_back({"l40", "L40", {"L40"}, 181.05, 864, 4, 16, 0, false, true});               // [L40]
  t.push_back({"l4", "L4", {"L4"}, 121, 300, 4, 16, 0, false, true});                     // [L4]
  t.push_back({"a10", "A10", {"A10"}, 125, 600, 4, 16, 0, false, true});                  // [A10]
  t.push_back({"a30", "A30", {"A30"}, 165, 933, 4, 16, 0, false, true});                  // [A30]
  return t;
}

}  // namespace

std::string normalize_gpu_name(const std::string& name) {
  std::string s;
  for (char c : name) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (l == '-' || l == '_' || l == '\t') l = ' ';
    if (l == ' ' && (s.empty() || s.back() == ' ')) continue;
    s += l;
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.rfind("nvidia ", 0) == 0) s.erase(0, 7);
  return s;
}

const std::vector<GpuSku>& gpu_sku_table() {
  static const std::vector<GpuSku> table = build_table();
  return table;
}

const GpuSku* match_gpu_sku(const std::string& device_name) {
  // Exact names after normalising, never a prefix: "A10" must not take "A100-…", nor "H100" an
  // "H100 NVL" (a different memory and power class).
  std::string n = normalize_gpu_name(device_name);
  if (n.empty()) return nullptr;
  for (const auto& sku : gpu_sku_table())
    for (const auto& alias : sku.device_names)
      if (normalize_gpu_name(alias) == n) return &sku;
  return nullptr;
}

// kGemmEfficiency: the "Maximum Achievable Matmul FLOPS" table of stas00/ml-engineering
// (compute/accelerator/README.md: BF16 matmul, best shape, 100 iterations after 50 warm-up)
// measured A100 SXM 86.9%, GH200 83.6%, A100 PCIe 81.1%, H100 SXM 80.3%, B200 77.6% of the dense
// datasheet; a public torch run on "NVIDIA H100 80GB HBM3" reached 797.5 TFLOPS (80.6%) at
// 8192x8192 (zzc0721/torch-performance-test-data#79). 8192^3 is not every GPU's best shape and
// clocks vary with power and temperature, so 0.75 is what a healthy GPU should reach.
Expectation expected_gemm_tflops(const GpuSku* sku) {
  if (sku == nullptr) return {std::nullopt, "no entry in the expected-performance model"};
  std::string basis = sku->label + " datasheet " + fmt(sku->bf16_dense_tflops, 1) +
                      " TFLOPS dense BF16 x " + percent(kGemmEfficiency) + " (cuBLAS efficiency";
  basis += sku->gemm_efficiency_unmeasured ? ", assumed: no public matmul measurement of this card)"
                                           : ")";
  return {sku->bf16_dense_tflops * kGemmEfficiency, basis};
}

// kDeviceCopyEfficiency: a device-to-device copy reads and writes every byte, so both count
// against the HBM figure. STREAM-style copies on H100 SXM reach ~3.0 of 3.35 TB/s (~90%) and
// on A100 ~1.35-1.40 of 1.555 TB/s (~87-90%); 0.85 leaves room for ECC and clocks.
Expectation expected_device_copy_gb_per_s(const GpuSku* sku) {
  if (sku == nullptr) return {std::nullopt, "no entry in the expected-performance model"};
  return {sku->memory_bandwidth_gb_per_s * kDeviceCopyEfficiency,
          sku->label + " datasheet memory bandwidth " + fmt(sku->memory_bandwidth_gb_per_s, 0) +
              " GB/s x " + percent(kDeviceCopyEfficiency) + " (copy counted as read + write)"};
}

topo::PcieLink narrower_link(const topo::PcieLink& a, const topo::PcieLink& b) {
  topo::PcieLink out;
  if (a.generation && b.generation)
    out.generation = std::min(*a.generation, *b.generation);
  else
    out.generation = a.generation ? a.generation : b.generation;
  if (a.width && b.width)
    out.width = std::min(*a.width, *b.width);
  else
    out.width = a.width ? a.width : b.width;
  return out;
}

// kHostCopyEfficiency: TLP headers and flow control cost ~10-15% of the PCIe data rate.
// NVIDIA's nvbandwidth blog shows host_to_device_memcpy_ce at 55.6 GB/s on a Gen5 x16 H100
// (88% of 63.0 GB/s); Azure's node health checks (azurehpc-health-checks conf/
// nd96isr_h100_v5.conf: check_cuda_bw 52; nd96asr_v4.conf, A100 Gen4: 24) fail below 82% and
// 76% of the data rate.
Expectation expected_host_copy_on_link_gb_per_s(const topo::PcieLink& trained) {
  if (!trained.generation || !trained.width)
    return {std::nullopt, "the PCIe link (" + topo::to_string(trained) + ") is not known"};
  double gb_per_s = topo::pcie_data_rate_gbps(*trained.generation, *trained.width) / 8;
  if (gb_per_s <= 0)
    return {std::nullopt, "PCIe " + topo::to_string(trained) + " has no data rate"};
  return {gb_per_s * kHostCopyEfficiency, "PCIe " + topo::to_string(trained) + " data rate " +
                                              fmt(gb_per_s, 1) + " GB/s x " +
                                              percent(kHostCopyEfficiency)};
}

Expectation expected_host_copy_gb_per_s(const GpuSku* sku, const topo::PcieLink& capable) {
  if (capable.generation && capable.width) {
    Expectation e = expected_host_copy_on_link_gb_per_s(capable);
    e.basis += " (the link the GPU and its upstream port can train, sysfs max_link_*)";
    return e;
  }
  if (sku != nullptr && sku->pcie_generation == 0)
    return {std::nullopt, sku->label +
                              " reaches host memory over NVLink-C2C (shared by the "
                              "superchip's GPUs), not PCIe: not modelled"};
  if (sku != nullptr) {
    Expectation e = expected_host_copy_on_link_gb_per_s({sku->pcie_generation, sku->pcie_width});
    e.basis += " (" + sku->label + " datasheet host interface; sysfs gave no max link)";
    return e;
  }
  return {std::nullopt, "neither sysfs max_link_* nor the model knows this GPU's PCIe link"};
}

// kAllreduceEfficiency: nccl-tests' busbw over NVLink reaches ~75-85% of the per-direction
// NVLink bandwidth with the Ring algorithm (Azure's nd96asr_v4.conf, 8x A100 SXM: fail below
// 228 GB/s of 300, 76%); NVLink SHARP (NVLS, Hopper and later with NVSwitch) reduces inside the
// switch and exceeds it (nd96isr_h100_v5.conf, 8x H100: 460 GB/s of 450). The expectation is the
// Ring one for both runs, so a node without NVLS is not flagged; NVLS shows as a fraction > 1.
Expectation expected_allreduce_busbw_gb_per_s(const GpuSku* sku, int gpus) {
  if (gpus < 2) return {std::nullopt, "an all-reduce needs 2 or more GPUs"};
  if (sku == nullptr) return {std::nullopt, "no entry in the expected-performance model"};
  if (!sku->nvlink_all_to_all || sku->nvlink_gb_per_s_per_direction <= 0)
    return {std::nullopt, sku->label +
                              ": the GPUs talk over PCIe or NVLink bridges whose pairing the name "
                              "does not tell; not modelled (compare runs with fabcheck report "
                              "--baseline)"};
  return {sku->nvlink_gb_per_s_per_direction * kAllreduceEfficiency,
          sku->label + " NVLink " + fmt(sku->nvlink_gb_per_s_per_direction, 0) +
              " GB/s per direction x " + percent(kAllreduceEfficiency)};
}

}  // namespace fabkit::probes
