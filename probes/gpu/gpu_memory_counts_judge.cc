// GPU memory health by count: how much of the spare rows and the page-retirement table is spent,
// and ECC counts per memory location past the limits the peers drain at. The pending/failed flags
// are judge_memory's (gpu_health_judge.cc); these rules catch the GPU that is running out of
// ways to contain its errors before a flag says so. docs/findings/gpu.md lists the codes.
//
// Sources, beside each threshold below:
//  - NVIDIA, "GPU Memory Error Management" (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt),
//    "Row Remapping" and "RMA Policy" pages;
//  - Azure NHC (Azure/azurehpc-health-checks), customTests/azure_gpu_ecc.nhc @0295e2f and the
//    ND H100 v5 configuration conf/nd96isr_h100_v5.conf (`check_gpu_ecc 20000000 10000`).
#include "probes/gpu/gpu_judge_detail.h"

namespace fabkit::probes::gpu_detail {
namespace {

// NVIDIA's Row Remapping page: Ampere and later support "up to 512 remapping for the frame
// buffer"; its RMA Policy: a remap failure is flagged "after 512 total remappings for an
// uncorrectable memory error have occurred". At 512 the budget is spent and the next
// uncorrectable error cannot be contained. Azure NHC's rule fails above 512 (FaultCode NHC2007;
// at @0295e2f it reads the fourth field of its three-field --query-remapped-rows, so it never
// fires there: one more reason not to wait for it).
constexpr unsigned kUncorrectableRemapLimit = 512;
// NVIDIA's Row Remapping page: page retirement (before Ampere) "supported a maximum of 64
// retirements for the frame buffer". Azure NHC fails a V100 whose single- plus double-bit
// retired pages reach 62 while a retirement is pending ("Retirement Table Full", NHC2018).
constexpr uint64_t kRetiredPagesFull = 62;
constexpr uint64_t kRetiredPagesMax = 64;
// Azure NHC, ND H100 v5: fail above 10000 correctable SRAM errors (volatile or aggregate,
// NHC2019) and above 20,000,000 DRAM errors of either kind (volatile or aggregate, NHC2019).
constexpr uint64_t kSramCorrectableLimit = 10000;
constexpr uint64_t kDramErrorLimit = 20000000;

std::string smi(const GpuDevice& d, const char* what) {
  return "`nvidia-smi -q -d " + std::string(what) + " -i " + index_text(d) + "`";
}

std::string drain_and_diag(const GpuDevice& d) {
  return "drain the node (`scontrol update NodeName=$(hostname -s) State=DRAIN Reason=...`), run "
         "NVIDIA's field diagnostic (`dcgmi diag -r 3 -i " +
         index_text(d) + "`)";
}

void judge_remaps(const GpuDevice& d, std::vector<Finding>& out) {
  const auto& r = d.health.remapped_rows;
  // A failed remap is already gpu.remap_failed, with the RMA.
  if (!r || r->failure || r->uncorrected < kUncorrectableRemapLimit) return;
  out.push_back(fail("gpu.remap_uncorrectable_limit", subject_of(d),
                     gpu_name(d) + ": " + std::to_string(r->uncorrected) +
                         " rows remapped for uncorrectable errors, at or past the " +
                         std::to_string(kUncorrectableRemapLimit) +
                         " the frame buffer has (NVIDIA's row-remapping limit): the next "
                         "uncorrectable error cannot be remapped",
                     drain_and_diag(d) + " and RMA the GPU; " + smi(d, "ROW_REMAPPER")));
}

void judge_retired_pages(const GpuDevice& d, std::vector<Finding>& out) {
  const RetiredPagesFacts& rp = d.health.retired_pages;
  if (!rp.multiple_single_bit && !rp.double_bit) return;
  const uint64_t total = rp.multiple_single_bit.value_or(0) + rp.double_bit.value_or(0);
  if (total < kRetiredPagesFull) return;
  const std::string seen = gpu_name(d) + ": " + std::to_string(total) + " pages retired (" +
                           std::to_string(rp.double_bit.value_or(0)) + " double-bit, " +
                           std::to_string(rp.multiple_single_bit.value_or(0)) +
                           " repeated single-bit) of the " + std::to_string(kRetiredPagesMax) +
                           " the page-retirement table holds";
  if (rp.pending.value_or(false))
    out.push_back(fail("gpu.retired_pages_full", subject_of(d),
                       seen + ", and another is pending: the table is full and memory errors "
                              "can no longer be retired",
                       drain_and_diag(d) + " and RMA the GPU; " + smi(d, "PAGE_RETIREMENT")));
  else
    out.push_back(warn(
        "gpu.retired_pages_full", subject_of(d),
        seen + ": at most " + std::to_string(kRetiredPagesMax - total) + " more can be retired",
        "an RMA candidate: plan its replacement; " + smi(d, "PAGE_RETIREMENT") +
            " (a pending retirement then fails the GPU)"));
}

// "N volatile, M aggregate" of the counts present.
std::string both(const std::optional<uint64_t>& v, const std::optional<uint64_t>& a) {
  std::string s;
  if (v) s = std::to_string(*v) + " since the driver loaded";
  if (a) s += (s.empty() ? "" : ", ") + std::to_string(*a) + " over the board's life";
  return s;
}

bool above(const std::optional<uint64_t>& v, uint64_t limit) { return v && *v > limit; }

void judge_sram(const GpuDevice& d, std::vector<Finding>& out) {
  const auto& sram = d.health.ecc.sram;
  if (!sram) return;
  const EccCounts &vol = sram->volatile_counts, &agg = sram->aggregate_counts;
  // SRAM is the GPU die's own memory (L2, register files): no row remapping or page retirement
  // takes a bad cell out, so a reset does not help. Azure NHC fails any uncorrectable SRAM error,
  // volatile or aggregate (NHC2019); NVIDIA's RMA Policy sends SRAM errors to the field
  // diagnostic, whose "SRAM Threshold Exceeded" flag is the RMA criterion.
  if (above(vol.uncorrected, 0) || above(agg.uncorrected, 0))
    out.push_back(fail("gpu.sram_uncorrected", subject_of(d),
                       gpu_name(d) + ": uncorrectable SRAM ECC errors (" +
                           both(vol.uncorrected, agg.uncorrected) +
                           "): on-die memory (L2 cache, register files) returned corrupt data, "
                           "and no row remapping or page retirement can take it out of use",
                       drain_and_diag(d) +
                           "; RMA the GPU when it reports the SRAM threshold "
                           "exceeded; " +
                           smi(d, "ECC")));
  if (above(vol.corrected, kSramCorrectableLimit) || above(agg.corrected, kSramCorrectableLimit))
    out.push_back(fail("gpu.sram_correctable_high", subject_of(d),
                       gpu_name(d) + ": correctable SRAM ECC errors (" +
                           both(vol.corrected, agg.corrected) + ") above " +
                           std::to_string(kSramCorrectableLimit) +
                           " (Azure NHC's limit): on-die memory that corrects this often is "
                           "failing",
                       drain_and_diag(d) + "; RMA the GPU if it fails; " + smi(d, "ECC")));
}

void judge_dram(const GpuDevice& d, std::vector<Finding>& out) {
  const auto& dram = d.health.ecc.dram;
  if (!dram) return;
  const EccCounts &vol = dram->volatile_counts, &agg = dram->aggregate_counts;
  if (!above(vol.corrected, kDramErrorLimit) && !above(agg.corrected, kDramErrorLimit) &&
      !above(vol.uncorrected, kDramErrorLimit) && !above(agg.uncorrected, kDramErrorLimit))
    return;
  out.push_back(
      fail("gpu.dram_ecc_high", subject_of(d),
           gpu_name(d) + ": DRAM ECC errors above " + std::to_string(kDramErrorLimit) +
               " (Azure NHC's limit): correctable " + both(vol.corrected, agg.corrected) +
               "; uncorrectable " + both(vol.uncorrected, agg.uncorrected),
           drain_and_diag(d) + "; RMA the GPU if it fails; " + smi(d, "ECC,ROW_REMAPPER")));
}

}  // namespace

void judge_memory_counts(const GpuDevice& d, std::vector<Finding>& out) {
  judge_remaps(d, out);
  judge_retired_pages(d, out);
  judge_sram(d, out);
  judge_dram(d, out);
}

}  // namespace fabkit::probes::gpu_detail
