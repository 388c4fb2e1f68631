// Sources (read 2026-11-26):
//  [C] NVIDIA, "Analyzing Xid Errors with the Xid Catalog" (Xid Errors, GPU deployment docs),
//      https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html: per Xid the
//      mnemonic, description and "Resolution Bucket (Immediate Action)" (RESTART_APP, RESET_GPU,
//      RESTART_BM, IGNORE, WORKFLOW_*), for Ampere and newer GPUs.
//  [M] NVIDIA, "NVIDIA GPU Memory Error Management" (A100 and later),
//      https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html: row remapping (a
//      pending remap takes effect at the next GPU reset; a remapping failure is an RMA
//      criterion), error containment (Xid 94 contained, 95 uncontained) and the recovery action.
//  [P] NVIDIA, "Dynamic Page Retirement", https://docs.nvidia.com/deploy/dynamic-page-retirement/
//      visibility.html: Xid 48 DBE, 63 page retired ("reload the driver to activate"), 64
//      retirement failed, on GPUs before Ampere.
//  [G] leptonai/gpud@4a8de33a, components/accelerator/nvidia/xid/xid.go: per Xid an event type;
//      Fatal makes the node Unhealthy, Critical Degraded, Warning and Info leave it Healthy
//      (health_state.go). Its catalog_generated.go copies [C]'s buckets and the "XID 144-150
//      Decode" sheet, whose Non-fatal rows all say IGNORE or XID_154_EVAL.
//  [A] Azure/azurehpc-health-checks@0e0a1ac2, customTests/azure_gpu_xid.nhc: fails the node on
//      48 56 57 58 62 63 64 65 68 69 73 74 79 80 81 92 119 120, ignores every other Xid.
//  [I] imbue-ai/cluster-health@8f5964ac, health_checks/health_checks.py
//      _HARDWARE_XID_ERROR_RANGES: fails on 48, 56-58, 62-64, 68-77, 79-86, 88-89, 92, 94-105,
//      110-120, 122-125, ignores every other Xid.
// Severity policy (issue #18, revised in issue #39): a drain for 48, 63, 64, 92, 94, 95, 79, every
// Xid whose immediate action in [C] is RESET_GPU or RESTART_BM, and every Xid that at least two of
// [G] (Fatal), [A] and [I] fail on; informational (a note, never a warning) for the Xids an
// application causes, which [A] and [I] ignore and [G] keeps Healthy. [A]'s list ends at 120 and
// [I]'s at 125: for the Xids after them (136 and on) and for 46 and 109, [C]'s RESET_GPU decides
// alone. Each entry names its sources.
#include "probes/kernel_log/xid_catalog.h"

#include <algorithm>
#include <cctype>

namespace fabkit::probes {
namespace {

using C = XidClass;

constexpr const char* kAppFix =
    "the application that ran on this GPU faulted; rerun it under compute-sanitizer or cuda-gdb; "
    "if it recurs with different jobs, run dcgmi diag -r 3 on the node";
constexpr const char* kResetFix =
    "drain the node, stop the GPU's processes and reset it (nvidia-smi -r -i <gpu>) or reboot; "
    "if it recurs, run dcgmi diag -r 3 and contact the vendor";
constexpr const char* kHardwareFix =
    "drain the node; run dcgmi diag -r 3 and nvidia-smi -q; reset the GPU or power-cycle the node; "
    "contact the vendor with nvidia-bug-report.sh if it recurs";
constexpr const char* kNvlink5Fix =
    "the line says Fatal or Nonfatal; a fatal one needs the GPU reset (the following Xid 154 names "
    "the recovery action); check nvidia-smi nvlink -s and the fabric manager log";

const XidInfo kTable[] = {
    {8, "GPU stopped processing",
     "the GPU stopped processing a channel (an idle timeout) (NVIDIA's Xid catalog: RESTART_APP; "
     "Azure NHC and imbue ignore it, gpud: Warning)",
     kAppFix, C::kApplication},
    {13, "Graphics Engine Exception",
     "an application fault: out-of-bounds access, illegal instruction or register; rarely hardware "
     "(NVIDIA's Xid catalog: RESTART_APP; Azure NHC and imbue ignore it, gpud: Warning)",
     kAppFix, C::kApplication},
    {31, "GPU memory page fault",
     "the GPU's MMU reported an illegal address access, usually an application bug (NVIDIA's Xid "
     "catalog: RESTART_APP; Azure NHC and imbue ignore it, gpud: Warning)",
     kAppFix, C::kApplication},
    {32, "Invalid or corrupted push buffer stream",
     "the DMA controller between driver and GPU saw a corrupt stream; NVIDIA: primarily PCIe "
     "quality issues, not the application (NVIDIA's Xid catalog: RESTART_APP; Azure NHC and imbue "
     "ignore it; gpud alone calls it Fatal)",
     "restart the application; if it recurs, check the GPU's PCIe link (fabcheck node's pcie "
     "section, AER counts) and reseat the card",
     C::kApplication},
    {38, "Driver firmware error",
     "a watchdog timeout in the GPU's firmware (FECS) (NVIDIA's Xid catalog: IGNORE; Azure NHC and "
     "imbue ignore it; gpud alone calls it Fatal)",
     "restart the application; contact support if it recurs", C::kApplication},
    {43, "GPU stopped processing",
     "a user application hit a software-induced fault and was stopped; the GPU stays healthy "
     "(NVIDIA's Xid catalog: IGNORE; Azure NHC and imbue ignore it, gpud: Warning)",
     kAppFix, C::kApplication},
    {45, "Preemptive cleanup, due to previous errors",
     "the driver tore down an application: Ctrl-C, a kill, a GPU reset, or an earlier Xid "
     "(NVIDIA's Xid catalog: IGNORE when not alone)",
     "look at the Xid logged before it on the same GPU", C::kInformational},
    {46, "GPU stopped processing", "the GPU timed out (NVIDIA's Xid catalog: RESET_GPU)", kResetFix,
     C::kDrain},
    {48, "Double Bit ECC Error",
     "an uncorrectable ECC error in GPU memory; a GPU reset or reboot clears it (NVIDIA's Xid "
     "catalog; NVIDIA's dynamic page retirement guide)",
     "drain the node; nvidia-smi -q -d ECC,ROW_REMAPPER; reset the GPU (a pending row remap takes "
     "effect then) and replace it if remapping failed (NVIDIA's GPU memory error management guide)",
     C::kDrain},
    {61, "Internal micro-controller breakpoint/warning",
     "an internal micro-controller warning (before Ampere; NVIDIA's Xid catalog lists it unused on "
     "Ampere and newer; Azure NHC and imbue ignore it; gpud alone calls it Fatal)",
     "reset the GPU if it repeats; contact support", C::kApplication},
    {62, "Internal micro-controller halt",
     "an internal micro-controller halted (NVIDIA's Xid catalog: RESET_GPU)", kResetFix, C::kDrain},
    {63, "GPU memory remapping event",
     "ECC errors made the GPU mark a memory row for remapping (or retire a page before Ampere); "
     "it takes effect at the next GPU reset or driver reload (NVIDIA's GPU memory error management "
     "guide; NVIDIA's dynamic page retirement guide). NVIDIA's Xid catalog gives IGNORE as the "
     "immediate action; "
     "fabcheck drains because the remap is pending until a reset",
     "drain the node and reset the GPU (nvidia-smi -r) to activate the remap; nvidia-smi -q -d "
     "ROW_REMAPPER shows pending and failed remaps",
     C::kDrain},
    {64, "GPU memory remapping failure",
     "the GPU could not remap (or retire) a failing memory row: a row-remapping failure is an RMA "
     "criterion (NVIDIA's GPU memory error management guide) (NVIDIA's Xid catalog: RESET_GPU)",
     "drain the node; nvidia-smi -q -d ROW_REMAPPER (Remapping Failure Occurred: Yes); RMA the GPU",
     C::kDrain},
    {56, "Display Engine error",
     "the display engine failed (NVIDIA's Xid catalog: unused on Ampere and newer, "
     "CONTACT_SUPPORT). Azure NHC and imbue fail the node on it (imbue: a hardware Xid); gpud: "
     "Warning",
     kHardwareFix, C::kDrain},
    {57, "Error programming video memory interface",
     "the driver could not program the GPU's memory interface (NVIDIA's Xid catalog: unused on "
     "Ampere and newer, CONTACT_SUPPORT). Azure NHC and imbue fail the node on it; gpud: Warning",
     kHardwareFix, C::kDrain},
    {58, "Unstable video memory interface detected",
     "the GPU's memory interface is unstable (NVIDIA's Xid catalog: unused on Ampere and newer, "
     "CONTACT_SUPPORT). Azure NHC and imbue fail the node on it; gpud: Warning",
     kHardwareFix, C::kDrain},
    {68, "NVDEC0 Exception",
     "the video decoder faulted (NVIDIA's Xid catalog: RESTART_APP; its older Xid listing names "
     "hardware, driver and application as causes). Azure NHC, imbue and gpud (Fatal) all fail the "
     "node on it",
     kHardwareFix, C::kDrain},
    {69, "Graphics Engine class error",
     "an invalid class in the graphics engine (NVIDIA's Xid catalog: RESTART_APP). Azure NHC, "
     "imbue and gpud (Fatal) all fail the node on it",
     kHardwareFix, C::kDrain},
    {73, "NVENC2 Error",
     "the video encoder failed (NVIDIA's Xid catalog: unused on Ampere and newer, "
     "CONTACT_SUPPORT). Azure NHC and imbue fail the node on it; gpud: Warning",
     kHardwareFix, C::kDrain},
    {74, "NVLINK Error",
     "an NVLink connection to another GPU or NVSwitch failed; a GPU reset or reboot is needed to "
     "clear it; the device at the other end may be the cause (NVIDIA's Xid catalog)",
     "drain the node; nvidia-smi nvlink -s -i <gpu> and nvidia-smi nvlink -e; reset or reboot; "
     "contact the vendor if it persists",
     C::kDrain},
    {79, "GPU has fallen off the bus",
     "the driver found the GPU inaccessible over PCIe, usually a PCIe link failure, sometimes "
     "failing GPU hardware (NVIDIA's Xid catalog: RESTART_BM)",
     "drain the node and power-cycle it (bare-metal restart); check the kernel log for PCIe/AER "
     "errors before the Xid and reseat the GPU, riser and cables",
     C::kDrain},
    {80, "Corrupted data sent to GPU",
     "the push buffer reached the GPU with a CRC mismatch (NVIDIA's Xid catalog: RESTART_APP, "
     "investigate CHECK_APP/CUDA). Azure NHC and imbue fail the node on it (imbue: a hardware "
     "Xid); gpud: Warning. Corruption on the way to the GPU points at PCIe or memory",
     "drain the node; check the GPU's PCIe link (fabcheck node's pcie section, AER counts), run "
     "dcgmi diag -r 3, reseat the card; contact the vendor if it recurs",
     C::kDrain},
    {81, "VGA Subsystem Error",
     "the GPU's VGA subsystem failed, a hardware failure by NVIDIA's older Xid listing (NVIDIA's "
     "Xid catalog: unused on Ampere and newer, CONTACT_SUPPORT). Azure NHC, imbue and gpud "
     "(Fatal) all fail the node on it",
     kHardwareFix, C::kDrain},
    {92, "High single-bit ECC error rate",
     "correctable ECC errors at a high rate, which precede uncorrectable ones. NVIDIA's Xid "
     "catalog gives IGNORE as the "
     "immediate action; fabcheck drains (issue #18) so the GPU is checked before the next job",
     "drain the node; nvidia-smi -q -d ECC,ROW_REMAPPER; reset the GPU and watch the counts",
     C::kDrain},
    {94, "Contained memory error",
     "an uncorrectable memory error contained to one application, which must restart; reset the "
     "GPU when convenient (NVIDIA's Xid catalog: RESTART_APP; NVIDIA's GPU memory error management "
     "guide). fabcheck drains so the reset happens",
     "drain the node, reset the GPU (nvidia-smi -r), check nvidia-smi -q -d ROW_REMAPPER",
     C::kDrain},
    {95, "Uncontained memory error",
     "an uncorrectable memory error that affected several applications; the GPU must be reset "
     "before applications restart (NVIDIA's Xid catalog: RESET_GPU; NVIDIA's GPU memory error "
     "management guide)",
     kResetFix, C::kDrain},
    {109, "Context Switch Timeout Error",
     "a context switch timed out (NVIDIA's Xid catalog: RESET_GPU)", kResetFix, C::kDrain},
    {110, "Security Fault Error",
     "uncommon unless hardware failed (NVIDIA's Xid catalog: RESET_GPU)",
     "revert recent hardware changes and cold-reset the system; contact the vendor if it persists",
     C::kDrain},
    {119, "GSP RPC Timeout",
     "the GPU's GSP firmware core did not answer an RPC in time; a reset or power cycle may be "
     "needed (NVIDIA's Xid catalog: RESET_GPU)",
     kResetFix, C::kDrain},
    {120, "GSP Error", "code on the GPU's GSP core failed (NVIDIA's Xid catalog: RESET_GPU)",
     kResetFix, C::kDrain},
    {121, "C2C Error",
     "corrected errors on the NVLink-C2C link to a Grace CPU; no operational impact (NVIDIA's Xid "
     "catalog: IGNORE; Azure NHC and imbue ignore it; gpud alone calls it Fatal)",
     "reset the GPU at a service window to retrain the link", C::kApplication},
    {136, "Link Training Failed",
     "an NVLink link failed to train (NVIDIA's Xid catalog: RESET_GPU)", kResetFix, C::kDrain},
    {137, "NVLink Privilege Error",
     "an illegal NVLink peer-to-peer access, usually an application bug (NVIDIA's Xid catalog: "
     "IGNORE; gpud: Warning; Azure NHC and imbue ignore it)",
     kAppFix, C::kApplication},
    {140, "ECC Unrecovered Error",
     "uncorrectable memory errors that stopped the driver from remapping rows or offlining pages "
     "(NVIDIA's Xid catalog: RESET_GPU)",
     "drain the node and reset the GPU; contact the vendor if it persists", C::kDrain},
    {143, "GPU Initialization Error",
     "the GPU failed to initialize (NVIDIA's Xid catalog: RESET_GPU)", kResetFix, C::kDrain},
    {144, "NVLINK: SAW Error",
     "an NVLink5 error in the SAW unit (NVIDIA's Xid catalog: WORKFLOW_NVLINK5_ERR)", kNvlink5Fix,
     C::kByMessage},
    {145, "NVLINK: RLW Error",
     "an NVLink5 error in the RLW unit (NVIDIA's Xid catalog: WORKFLOW_NVLINK5_ERR)", kNvlink5Fix,
     C::kByMessage},
    {146, "NVLINK: TLW Error",
     "an NVLink5 error in the TLW unit (NVIDIA's Xid catalog: WORKFLOW_NVLINK5_ERR)", kNvlink5Fix,
     C::kByMessage},
    {147, "NVLINK: TREX Error",
     "an NVLink5 error in the TREX unit (NVIDIA's Xid catalog: WORKFLOW_NVLINK5_ERR)", kNvlink5Fix,
     C::kByMessage},
    {148, "NVLINK: NVLPW_CTRL Error",
     "an NVLink5 error in the NVLPW_CTRL unit (NVIDIA's Xid catalog: WORKFLOW_NVLINK5_ERR)",
     kNvlink5Fix, C::kByMessage},
    {149, "NVLINK: NETIR Error",
     "an NVLink5 network error (NETIR) (NVIDIA's Xid catalog: WORKFLOW_NVLINK5_ERR)", kNvlink5Fix,
     C::kByMessage},
    {150, "NVLINK: MSE Error",
     "an NVLink5 error in the MSE unit (NVIDIA's Xid catalog: WORKFLOW_NVLINK5_ERR)", kNvlink5Fix,
     C::kByMessage},
    {154, "GPU Recovery Action Changed",
     "summarises the recovery action the preceding Xids need: None, Drain P2P, Drain and Reset, "
     "GPU Reset Required or Node Reboot Required (NVIDIA's Xid catalog; NVIDIA's GPU memory error "
     "management guide)",
     "do what the action says: reset the GPU (nvidia-smi -r) or reboot the node, after draining it",
     C::kByMessage},
    {155, "NVLINK: SW Defined Error",
     "NVLink link-down events flagged as intentional (NVIDIA's Xid catalog: RESET_GPU)", kResetFix,
     C::kDrain},
    {156, "Resource Retirement Event",
     "a GPU resource was retired (NVIDIA's Xid catalog: RESET_GPU)", kResetFix, C::kDrain},
    {157, "Resource Retirement Failure",
     "no repair possible for lack of resources; work may continue but the Xid may recur (NVIDIA's "
     "Xid catalog: IGNORE)",
     "contact the vendor", C::kApplication},
    {158, "GPU Fatal Timeout", "a fatal timeout in the GPU (NVIDIA's Xid catalog: RESET_GPU)",
     kResetFix, C::kDrain},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

const char* to_string(XidClass c) {
  switch (c) {
    case XidClass::kDrain:
      return "drain";
    case XidClass::kApplication:
      return "application";
    case XidClass::kInformational:
      return "informational";
    case XidClass::kByMessage:
      return "by_message";
  }
  return "application";
}

const XidInfo* find_xid(int xid) {
  for (const auto& x : kTable)
    if (x.xid == xid) return &x;
  return nullptr;
}

std::string xid154_action(const std::string& detail) {
  // "GPU recovery action changed from 0x4 (Drain and Reset) to 0x1 (GPU Reset Required)"
  const std::string l = lower(detail);
  size_t to = l.rfind(" to 0x");
  if (l.find("recovery action") == std::string::npos || to == std::string::npos) return "";
  size_t open = detail.find('(', to), close = detail.find(')', to);
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return detail.substr(open + 1, close - open - 1);
}

std::optional<XidClass> xid_class_from_message(int xid, const std::string& detail) {
  if (xid == 154) {
    std::string action = lower(xid154_action(detail));
    if (action.empty()) return std::nullopt;
    return action == "none" ? XidClass::kInformational : XidClass::kDrain;
  }
  if (xid >= 144 && xid <= 150) {
    // "149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (...)", "145, RLW_RXPIPE Nonfatal XC0 ...". Every
    // Non-fatal row of [C]'s "XID 144-150 Decode" sheet says IGNORE or XID_154_EVAL (the driver
    // logs an Xid 154 when a recovery is needed, judged on its own), and [G] keeps the node
    // Healthy on them: a note, not a warning.
    const std::string l = " " + lower(detail) + " ";
    if (l.find(" nonfatal ") != std::string::npos) return XidClass::kInformational;
    if (l.find(" fatal ") != std::string::npos) return XidClass::kDrain;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace fabkit::probes
