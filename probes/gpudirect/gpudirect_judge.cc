#include <cstdio>
#include <regex>

#include "probes/gpudirect/gpudirect_facts.h"

namespace fabkit::probes {
namespace {

bool has_token(const std::string& cmdline, const std::string& token) {
  size_t pos = 0;
  while ((pos = cmdline.find(token, pos)) != std::string::npos) {
    bool start = pos == 0 || cmdline[pos - 1] == ' ';
    size_t end = pos + token.size();
    if (start && (end == cmdline.size() || cmdline[end] == ' ')) return true;
    pos = end;
  }
  return false;
}

std::string hex16(uint16_t v) {
  char b[8];
  snprintf(b, sizeof b, "0x%04x", v);
  return b;
}

}  // namespace

NvidiaDriver parse_nvidia_version(const std::string& line) {
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  Release Build ..."
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.82.01  Wed Oct 27 ..."
  NvidiaDriver d;
  d.open_kernel_module = line.find("Open Kernel Module") != std::string::npos;
  static const std::regex kVersion(R"(\s(\d{3,4})\.\d+(\.\d+)?\s)");
  std::smatch m;
  if (std::regex_search(line, m, kVersion)) d.major = std::stoi(m[1].str());
  return d;
}

std::optional<std::pair<int, int>> parse_kernel_version(const std::string& release) {
  int major = 0, minor = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &major, &minor) != 2) return std::nullopt;
  return std::make_pair(major, minor);
}

std::optional<bool> dmabuf_possible(const GpuDirectFacts& f) {
  if (!f.kernel_release || !f.nvidia_version_line) return std::nullopt;
  auto k = parse_kernel_version(*f.kernel_release);
  NvidiaDriver d = parse_nvidia_version(*f.nvidia_version_line);
  if (!k || !d.major) return std::nullopt;
  bool kernel_ok = *k >= std::make_pair(5, 12);  // dma-buf move_notify for RDMA landed in 5.12
  return kernel_ok && d.open_kernel_module && *d.major >= 515;
}

std::string iommu_mode(const GpuDirectFacts& f) {
  std::string cmd = f.cmdline.value_or("");
  bool any_dma = false, any_identity = false;
  for (const auto& d : f.iommu_devices) {
    if (!d.group_type) continue;
    if (d.group_type->rfind("DMA", 0) == 0) any_dma = true;
    if (*d.group_type == "identity") any_identity = true;
  }
  if (any_dma) return "translated";
  if (any_identity || has_token(cmd, "iommu=pt")) return "passthrough";
  if (has_token(cmd, "intel_iommu=off") || has_token(cmd, "amd_iommu=off") ||
      has_token(cmd, "iommu=off"))
    return "off";
  if (f.iommu_units.empty() && f.cmdline) return "off";
  return "unknown";
}

std::vector<Finding> judge_gpudirect(const GpuDirectFacts& f) {
  std::vector<Finding> out;
  if (!f.applicable) {
    out.push_back(
        info("gpudirect.not_applicable", "GPUDirect RDMA", "not applicable: " + f.reason));
    return out;
  }
  auto dmabuf = dmabuf_possible(f);
  if (!f.modules_readable) {
    out.push_back(info("gpudirect.modules_unknown", "/proc/modules",
                       "cannot read /proc/modules, so the peer-memory module state is unknown"));
  } else if (f.peer_modules.empty()) {
    std::string seen = "neither nvidia_peermem nor nv_peer_mem is loaded";
    const char* fix =
        "modprobe nvidia_peermem (persist: echo nvidia_peermem > "
        "/etc/modules-load.d/nvidia-peermem.conf); "
        "with MLNX_OFED older than 5.x the module is nv_peer_mem (service nv_peer_mem start)";
    if (dmabuf && *dmabuf) {
      out.push_back(info("gpudirect.peermem_missing", "nvidia_peermem",
                         seen + "; DMA-BUF is possible here (kernel >= 5.12, open NVIDIA module >= "
                                "515), which NCCL >= 2.19 uses instead",
                         fix));
    } else {
      out.push_back(
          warn("gpudirect.peermem_missing", "nvidia_peermem",
               seen + " and DMA-BUF is " + (dmabuf ? "not possible" : "unknown") +
                   " here: NCCL runs without GPUDirect RDMA (staging through host memory, "
                   "no \"GDRDMA\" in its channel lines)",
               fix));
    }
  }
  if (!f.nvidia_version_line) {
    out.push_back(info("gpudirect.driver_unknown", "/proc/driver/nvidia/version",
                       "no NVIDIA kernel driver version (file absent): the driver is not loaded or "
                       "the GPUs are not NVIDIA; DMA-BUF support cannot be judged"));
  } else if (dmabuf) {
    out.push_back(info(
        "gpudirect.dmabuf", "DMA-BUF",
        std::string("DMA-BUF GPUDirect ") + (*dmabuf ? "possible" : "not possible") + " (kernel " +
            f.kernel_release.value_or("?") + ", " + *f.nvidia_version_line + ")",
        *dmabuf ? "" : "DMA-BUF needs kernel >= 5.12 and the open NVIDIA kernel module >= 515"));
  }
  for (const auto& b : f.acs) {
    std::string path = "on the path GPU " + b.gpu + " <-> " + b.nic;
    switch (b.reading.state) {
      case AcsState::kRedirecting:
        out.push_back(
            warn("gpudirect.acs_redirect", b.bus_id,
                 "PCIe ACS redirects peer traffic on bridge " + b.bus_id + " " + path +
                     " (ACSCtl " + hex16(*b.reading.control) +
                     "): GPU<->NIC DMA goes up to the root complex, halving GPUDirect "
                     "bandwidth or failing it",
                 "on bare metal: setpci -s " + b.bus_id +
                     " ECAP_ACS+6.w=0000 (at every boot, or disable ACS in the BIOS); in a "
                     "VM leave it: the hypervisor needs ACS for device isolation"));
        break;
      case AcsState::kUnknown:
        out.push_back(
            info("gpudirect.acs_unknown", b.bus_id,
                 "ACS state of bridge " + b.bus_id + " " + path + " unknown: " + b.reading.reason));
        break;
      case AcsState::kDisabled:
      case AcsState::kNotPresent:
        break;
    }
  }
  std::string mode = iommu_mode(f);
  if (mode == "translated")
    out.push_back(
        warn("gpudirect.iommu_translated", "IOMMU",
             "the IOMMU translates DMA for the GPU/NIC (iommu_group type DMA): every "
             "GPUDirect transfer takes an IOMMU lookup and peer-to-peer may fail",
             "add iommu=pt to the kernel command line (with intel_iommu=on / amd_iommu=on "
             "kept for VFIO), e.g. in GRUB_CMDLINE_LINUX, update-grub, reboot"));
  return out;
}

Json to_json(const GpuDirectFacts& f) {
  Json acs = Json::array();
  for (const auto& b : f.acs)
    acs.push_back({{"bridge", b.bus_id},
                   {"gpu", b.gpu},
                   {"nic", b.nic},
                   {"state", to_string(b.reading.state)},
                   {"acs_ctl", b.reading.control ? Json(*b.reading.control) : Json(nullptr)},
                   {"acs_cap", b.reading.capability ? Json(*b.reading.capability) : Json(nullptr)},
                   {"reason", b.reading.reason.empty() ? Json(nullptr) : Json(b.reading.reason)}});
  Json iommu_devices = Json::array();
  for (const auto& d : f.iommu_devices)
    iommu_devices.push_back(
        {{"bus_id", d.bus_id}, {"group_type", d.group_type ? Json(*d.group_type) : Json(nullptr)}});
  auto dmabuf = dmabuf_possible(f);
  NvidiaDriver drv =
      f.nvidia_version_line ? parse_nvidia_version(*f.nvidia_version_line) : NvidiaDriver{};
  return {{"applicable", f.applicable},
          {"reason", f.reason.empty() ? Json(nullptr) : Json(f.reason)},
          {"gpu_count", f.gpu_count},
          {"hca_count", f.hca_count},
          {"peer_modules", f.peer_modules},
          {"modules_readable", f.modules_readable},
          {"nvidia_driver", f.nvidia_version_line ? Json(*f.nvidia_version_line) : Json(nullptr)},
          {"nvidia_driver_major", drv.major ? Json(*drv.major) : Json(nullptr)},
          {"nvidia_open_kernel_module",
           f.nvidia_version_line ? Json(drv.open_kernel_module) : Json(nullptr)},
          {"kernel_release", f.kernel_release ? Json(*f.kernel_release) : Json(nullptr)},
          {"dmabuf_possible", dmabuf ? Json(*dmabuf) : Json(nullptr)},
          {"acs", acs},
          {"iommu_mode", f.applicable ? Json(iommu_mode(f)) : Json(nullptr)},
          {"iommu_units", f.iommu_units},
          {"iommu_devices", iommu_devices}};
}

}  // namespace fabkit::probes
