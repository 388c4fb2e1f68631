// Findings for the events of system_lines.h. Severities follow what the peers do with the same
// lines; where none reads a line, the comment says why fabcheck chose what it did. gpud records
// every kernel-log match as a warning event unless the component marks the node unhealthy
// (pkg/kmsg/syncer.go); imbue's dmesg check warns (DmesgHealthCheckWarning) on every line its
// whitelist (health_checks/dmesg_whitelist.py) does not hold, so it warns on all of these but the
// OOM killer's lines and the 27W slot-power line, which it holds; LBNL NHC reads machine checks
// through mcelog (scripts/lbnl_hw.nhc, check_hw_mcelog); Azure NHC reads none of these lines.
#include "probes/kernel_log/kernel_log_text.h"
#include "probes/kernel_log/system_lines.h"

namespace fabkit::probes {
namespace {

// LBNL NHC fails check_hw_mcelog above MCELOG_MAX_CORRECTED_RATE, 9 corrected errors in 24 h.
constexpr int kCorrectedMceWarn = 10;

std::string details(const LogEventGroup& e, const char* what) {
  return e.details.empty() ? "" : std::string(" (") + what + kernel_log_joined(e.details) + ")";
}

}  // namespace

std::optional<Finding> system_event_finding(const KernelLogFacts& f, const LogEventGroup& e,
                                            const std::string& who, const std::string& seen) {
  const std::string line = ". Line: " + e.sample;
  const std::string& k = e.kind;
  if (k == "nvlink_training_failed") {
    // gpud (components/accelerator/nvidia/nvlink) marks the node unhealthy until a reboot, with
    // the reboot as its repair action: fail (imbue only warns, as on any line it does not know).
    const std::string what = "an NVLink failed to train" +
                             (e.device.empty() ? std::string() : " on " + who) + ": " + seen +
                             details(e, "");
    if (!e.device.empty()) {
      if (const std::string why = kernel_log_not_on_node(f, e.device); !why.empty())
        return warn("kernel_log.not_a_gpu", e.device, what + ", but " + why + line,
                    "lspci -d 10de: lists the GPUs; see who wrote the line (journalctl -k)");
    }
    return fail("kernel_log.nvlink_training_failed", e.device.empty() ? "NVLink" : e.device,
                what + "; the GPUs' NVLinks stay down until the node reboots" + line,
                "drain the node and reboot it; if it recurs, nvidia-smi nvlink -s and the "
                "fabric manager log name the link, then reseat or replace the GPU baseboard");
  }
  if (k == "kernel_panic")
    // gpud (components/os, from pstore) and imbue record a warning; fabcheck fails it: a panic
    // stops the kernel, so its line is in a capture of a boot that crashed (a journal, a serial
    // console, kdump), and what crashed it (the trace before the line) is not known to be gone.
    return fail("kernel_log.kernel_panic", "kernel",
                "the kernel panicked" + details(e, "") + ": " + seen + line,
                "drain the node; read the trace before the panic line (a machine check, a "
                "driver's oops); replace the part it names or update the driver and kernel");
  if (k == "hard_lockup")
    // No peer reads it. A CPU ran with interrupts off past the watchdog's threshold (10 s): only
    // a kernel, driver or firmware (SMI) fault does that, never a workload; fail, as a panic.
    return fail("kernel_log.hard_lockup", who,
                who + " locked up with interrupts off (hard lockup): " + seen + line,
                "drain the node; the stack trace after the line names the driver; update the "
                "BIOS/firmware and driver; replace the board if it recurs");
  if (k == "soft_lockup")
    // gpud (components/cpu, cpu_soft_lockup) records it as a warning event.
    return warn(
        "kernel_log.soft_lockup", who,
        "a CPU was stuck in the kernel running " + who + details(e, "") + ": " + seen + line,
        "the stack trace after the line names the driver (cuda-EvtHandlr: the NVIDIA "
        "driver); a job running then may have stalled; update the driver if it recurs");
  if (k == "hung_task")
    // gpud (components/cpu, cpu_blocked_too_long) records it as a warning event.
    return warn("kernel_log.hung_task", who,
                "task " + who + " was blocked in the kernel (state D)" + details(e, "") + ": " +
                    seen + line,
                "the stack trace after the line names what it waited on (a file system, NFS, "
                "the GPU driver); check that mount or device");
  if (k == "rcu_stall")
    // Another watchdog of a CPU stuck in the kernel, as a soft lockup: warn like gpud does those.
    return warn("kernel_log.rcu_stall", "kernel",
                "RCU grace periods stalled" + details(e, "") + ": " + seen + line,
                "the stack dumps after the line name the CPU and the code that held it; a "
                "job running then may have stalled; update the kernel or driver named there");
  // An "oom-kill:" line without task= names no process.
  const std::string process = e.device.empty() ? "a process the line does not name" : who;
  if (k == "oom_kill")
    // gpud (components/memory) records it as a warning event; imbue whitelists the OOM killer's
    // lines: at most a warning, and it is the process's, not the node's.
    return warn("kernel_log.oom_kill", process,
                "the kernel ran out of memory and killed " + process + ": " + seen + line,
                "the job asked for more host memory than the node has: fewer data-loader "
                "workers, smaller pinned buffers, or a Slurm --mem limit so the job, not the "
                "node, hits the limit");
  if (k == "oom_kill_cgroup")
    return info("kernel_log.oom_kill", process,
                "a memory cgroup (a container or Slurm job) hit its own limit and the kernel "
                "killed " +
                    process + ": " + seen + line,
                "the job's memory limit, not the node: raise it or use less");
  if (k == "mce_uncorrected")
    // LBNL NHC fails on any uncorrected machine check (MCELOG_MAX_UNCORRECTED_RATE 0); imbue
    // warns, gpud does not read them.
    return fail("kernel_log.mce_uncorrected", "CPU/memory",
                "uncorrected machine checks" + details(e, "") + ": " + seen + line,
                "drain the node; mcelog --client or ras-mc-ctl --errors names the DIMM or CPU; "
                "replace it");
  if (k == "mce_corrected")
    // LBNL NHC fails above 9 corrected errors in 24 h from mcelog's count; a log line is not
    // that count (the kernel rate-limits them and mcelog may have more), so warn from 10 lines.
    return e.count >= kCorrectedMceWarn
               ? warn("kernel_log.mce_corrected", "CPU/memory",
                      "corrected machine checks" + details(e, "") + ": " + seen +
                          "; at or above LBNL NHC's limit of " + std::to_string(kCorrectedMceWarn) +
                          line,
                      "mcelog --client or ras-mc-ctl --errors names the DIMM or CPU; replace it "
                      "at the next maintenance")
               : info("kernel_log.mce_corrected", "CPU/memory",
                      "corrected machine checks" + details(e, "") + ": " + seen + line,
                      "mcelog --client or ras-mc-ctl --errors names the DIMM or CPU");
  if (k == "mce_logged")
    return info("kernel_log.mce_logged", "CPU/memory",
                "the kernel logged machine check events: " + seen + line,
                "mcelog --client or ras-mc-ctl --errors says what they were");
  if (k == "mlx5_module_error")
    // gpud (components/accelerator/nvidia/infiniband, port_module_high_temperature) records it
    // as a warning event, NVSentinel as non-fatal: the module protects itself by taking the link
    // down, and the rdma section judges the port's state now.
    return warn("kernel_log.mlx5_module_error", e.device.empty() ? "mlx5" : e.device,
                "the transceiver module of " +
                    (who.empty() ? "a mlx5 NIC (the line names none)" : who) +
                    " reported an error" + details(e, "") + ": " + seen + line,
                "High Temperature: check the airflow past the NIC's cages and the module's "
                "power class (mlxlink -m); other errors: reseat or replace the cable or module");
  if (k == "mlx5_slot_power")
    // gpud (pci_power_insufficient) records it as a warning event; imbue whitelists the 27W
    // line of its nodes.
    return warn("kernel_log.mlx5_slot_power", e.device,
                "the PCIe slot of " + who + " advertises less power than the NIC needs" +
                    details(e, "") + ": " + seen +
                    "; the NIC may throttle or power its ports down" + line,
                "move the NIC to a slot that supplies its rated power, or set the slot's power "
                "limit in the BIOS; NVIDIA's adapter manual gives the card's rating");
  if (k == "mlx5_slot_power_unadvertised")
    // No peer reads it; healthy nodes print it for every NIC at boot (NVIDIA/gpu-operator#2511).
    return info("kernel_log.mlx5_slot_power", e.device,
                "the PCIe slot of " + who +
                    " does not advertise its power, so the NIC cannot check it: " + seen + line);
  return std::nullopt;
}

}  // namespace fabkit::probes
