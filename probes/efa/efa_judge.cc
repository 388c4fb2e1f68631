// Findings for EFA nodes. What libfabric does with each FI_* value follows fi_efa(7)
// (ofiwg/libfabric man/fi_efa.7.md, RUNTIME PARAMETERS).
#include <sstream>

#include "probes/efa/efa_facts.h"
#include "verbs/verbs_strings.h"

namespace fabkit::probes {
namespace {

const std::string* setting(const EfaFacts& f, const char* name) {
  auto it = f.settings.find(name);
  return it == f.settings.end() ? nullptr : &it->second;
}

std::optional<bool> bool_setting(const EfaFacts& f, const char* name) {
  const std::string* v = setting(f, name);
  return v ? parse_fi_bool(*v) : std::nullopt;
}

// FI_PROVIDER is a comma list, or a "^"-prefixed list of providers to leave out (fi_getinfo(3)
// "FI_PROVIDER"): whether it lets libfabric pick the efa provider.
bool provider_allows_efa(const std::string& value) {
  const bool exclude = !value.empty() && value[0] == '^';
  std::stringstream in(exclude ? value.substr(1) : value);
  std::string item;
  bool named = false;
  while (std::getline(in, item, ',')) named = named || item == "efa";
  return exclude ? !named : named;
}

std::string instance_text(const EfaFacts& f) {
  return f.instance ? std::string(f.instance->name) : f.product_name.value_or("unknown instance");
}

void judge_count(const EfaFacts& f, std::vector<Finding>& out) {
  const int have = static_cast<int>(f.devices.size());
  if (!f.instance) {
    if (have == 0) return;
    if (!f.sys_vendor && !f.product_name)
      out.push_back(
          info("efa.instance_unknown", "node",
               std::to_string(have) +
                   " EFA device(s) but no DMI identity "
                   "(/sys/class/dmi/id/sys_vendor and product_name unreadable or not "
                   "captured): the instance type, and so the device count it should have, "
                   "is not known",
               "capture /sys/class/dmi/id too, or run 'fabcheck node' on the instance"));
    else
      out.push_back(info("efa.instance_not_in_table", "node",
                         std::to_string(have) + " EFA device(s) on '" +
                             f.product_name.value_or("") + "' (vendor '" +
                             f.sys_vendor.value_or("") +
                             "'), a type fabcheck's table does not "
                             "know: the device count is not judged",
                         "compare with 'aws ec2 describe-instance-types --instance-types <type> "
                         "--query InstanceTypes[].NetworkInfo.EfaInfo'"));
    return;
  }
  const auto& row = *f.instance;
  const std::string n = std::to_string(row.efa_devices);
  if (have == 0) {
    out.push_back(fail("efa.no_devices", "node",
                       instance_text(f) + " supports " + n +
                           " EFA interface(s) but the node has "
                           "no EFA device (no /sys/class/infiniband device with driver efa): NCCL "
                           "falls back to TCP sockets between nodes",
                       "launch the instance with EFA interfaces (InterfaceType=efa, one per "
                       "network card: " +
                           n +
                           "); install the EFA driver (the aws-efa-installer) "
                           "and 'modprobe efa'; then 'fi_info -p efa' lists them"));
    return;
  }
  if (have < row.efa_devices) {
    out.push_back(fail("efa.devices_missing", "node",
                       instance_text(f) + " has " + std::to_string(have) + " of its " + n +
                           " EFA devices (" + std::to_string(row.efa_devices - have) +
                           " missing): NCCL runs on the rails it finds, and the node's "
                           "inter-node bandwidth drops with each missing one",
                       "attach an EFA interface on every network card (" + n + " for " + row.name +
                           ") at launch; a device that vanished on a running instance "
                           "needs the instance stopped and started, or replaced"));
  } else if (have > row.efa_devices) {
    out.push_back(info("efa.devices_over_table", "node",
                       instance_text(f) + " shows " + std::to_string(have) +
                           " EFA devices, more than the " + n + " of fabcheck's table",
                       "check the table's row (probes/efa/efa_instances.cc) against the AWS "
                       "network cards page"));
  }
}

void judge_ports(const EfaFacts& f, std::vector<Finding>& out) {
  for (const auto& d : f.devices) {
    // An unreadable state is rdma.gather_error's (it names the file), not a DOWN port.
    if (!d.state || d.state == verbs::PortState::kActive) continue;
    out.push_back(fail("efa.port_not_active", d.name,
                       d.name + ":1 is " + verbs::describe(*d.state) +
                           (d.phys_state ? " (" + verbs::describe(*d.phys_state) + ")" : "") +
                           "; an EFA port is ACTIVE whenever its interface is attached and the "
                           "driver is up",
                       "check 'ibv_devinfo -d " + d.name +
                           "' and 'dmesg | grep -i efa'; reload "
                           "the driver ('modprobe -r efa && modprobe efa') or stop and start the "
                           "instance"));
  }
}

void judge_settings(const EfaFacts& f, std::vector<Finding>& out) {
  const bool has_efa = !f.devices.empty();
  const std::string* provider = setting(f, "FI_PROVIDER");
  if (provider && has_efa && !provider_allows_efa(*provider))
    out.push_back(warn("efa.provider_not_efa", "FI_PROVIDER",
                       "FI_PROVIDER=" + *provider + " on a node with " +
                           std::to_string(f.devices.size()) +
                           " EFA device(s): libfabric will not use them, and NCCL's OFI plugin "
                           "runs over " +
                           *provider + " (or fails to start)",
                       "export FI_PROVIDER=efa (or unset it)"));
  if (provider && !has_efa && provider_allows_efa(*provider) && (*provider)[0] != '^')
    out.push_back(
        fail("efa.provider_without_device", "FI_PROVIDER",
             "FI_PROVIDER=" + *provider +
                 " but the node has no EFA device: libfabric "
                 "finds no provider, and NCCL's OFI plugin fails to initialise (NCCL falls "
                 "back to sockets, or the job stops)",
             f.instance && f.instance->efa_devices > 0
                 ? "attach EFA interfaces to the instance (see efa.no_devices)"
                 : "unset FI_PROVIDER on instances without EFA (the FSDP guide: comment "
                   "the FI_* lines out there)"));
  const auto rdma = bool_setting(f, "FI_EFA_USE_DEVICE_RDMA");
  if (rdma && *rdma && f.instance && !f.instance->device_rdma)
    out.push_back(fail("efa.device_rdma_unsupported", "FI_EFA_USE_DEVICE_RDMA",
                       "FI_EFA_USE_DEVICE_RDMA=" + *setting(f, "FI_EFA_USE_DEVICE_RDMA") + " on " +
                           instance_text(f) +
                           ", whose EFA has no RDMA read/write: libfabric aborts the application "
                           "(fi_efa(7), FI_EFA_USE_DEVICE_RDMA)",
                       "unset FI_EFA_USE_DEVICE_RDMA (or set it to 0) on " + instance_text(f) +
                           "; the FSDP guide comments it out on G5/G4dn/P3"));
  if (rdma && !*rdma && f.instance && f.instance->device_rdma && has_efa)
    out.push_back(warn("efa.device_rdma_off", "FI_EFA_USE_DEVICE_RDMA",
                       "FI_EFA_USE_DEVICE_RDMA=" + *setting(f, "FI_EFA_USE_DEVICE_RDMA") + " on " +
                           instance_text(f) +
                           ", which has device RDMA: libfabric emulates every RMA operation "
                           "instead of offloading it (fi_efa(7))",
                       "export FI_EFA_USE_DEVICE_RDMA=1 (or unset it: libfabric then uses RDMA "
                       "where the device has it)"));
  // Fork support (libfabric prov/efa efa_fork_support.c): FI_EFA_FORK_SAFE (a libfabric
  // boolean) or RDMAV_FORK_SAFE / IBV_FORK_SAFE (set at all, ibv_fork_init(3)) turn it on, which
  // stops huge-page buffers and aborts the process when FI_EFA_USE_HUGE_PAGE=1 is also set; with
  // it off on a kernel that does not copy DMA pages on fork, libfabric installs an atfork handler
  // that aborts the job at the first fork() ("Use Linux Kernel 5.13+ with rdma-core v35.0+").
  const auto fork_safe = bool_setting(f, "FI_EFA_FORK_SAFE");
  const bool fork_on =
      (fork_safe && *fork_safe) || setting(f, "RDMAV_FORK_SAFE") || setting(f, "IBV_FORK_SAFE");
  const std::string fork_var = fork_safe && *fork_safe         ? "FI_EFA_FORK_SAFE"
                               : setting(f, "RDMAV_FORK_SAFE") ? "RDMAV_FORK_SAFE"
                                                               : "IBV_FORK_SAFE";
  const auto huge = bool_setting(f, "FI_EFA_USE_HUGE_PAGE");
  const auto copy_on_fork = kernel_copies_dma_pages_on_fork(f);
  const std::string kernel = f.kernel_release.value_or("unknown");
  if (has_efa && fork_on && huge && *huge)
    out.push_back(fail("efa.fork_safe_with_huge_pages", fork_var,
                       fork_var +
                           " and FI_EFA_USE_HUGE_PAGE=" + *setting(f, "FI_EFA_USE_HUGE_PAGE") +
                           " are both set: libfabric's EFA provider aborts the application "
                           "(\"The usage of huge page is incompatible with rdma-core's fork "
                           "support\", prov/efa efa_fork_support.c; fi_efa(7): not supported)",
                       "unset FI_EFA_USE_HUGE_PAGE if the job forks, else unset " + fork_var));
  else if (has_efa && fork_on)
    out.push_back(info(
        "efa.fork_safe_set", fork_var,
        fork_var +
            " is set: libfabric's EFA provider turns on libibverbs fork "
            "support and stops using huge pages for its buffers "
            "(fi_efa(7), FI_EFA_FORK_SAFE)" +
            (copy_on_fork == true ? "; kernel " + kernel +
                                        " copies DMA pages on fork, so with rdma-core 35+ it is "
                                        "unneeded here"
                                  : std::string()),
        "keep it only on kernels before 5.13 (or rdma-core before 35) where the "
        "job forks after opening the EFA device"));
  if (has_efa && !fork_on && copy_on_fork == false)
    out.push_back(
        warn("efa.fork_unsafe_kernel", "node",
             "kernel " + kernel +
                 " does not copy DMA pages on fork (5.13+ does) and no "
                 "fork support is asked for (FI_EFA_FORK_SAFE, RDMAV_FORK_SAFE): libfabric's "
                 "EFA provider aborts the job at the first fork() after it opened the "
                 "device (PyTorch DataLoader workers, subprocess), prov/efa "
                 "efa_fork_support.c",
             "export FI_EFA_FORK_SAFE=1 (turns off huge-page buffers), or run Linux "
             "5.13+ with rdma-core 35+"));
  // Huge pages: the EFA provider takes its internal buffers from the huge page pool unless
  // fork support is on or FI_EFA_USE_HUGE_PAGE=0 (fi_efa(7), FI_EFA_USE_HUGE_PAGE).
  const bool uses_huge = has_efa && !fork_on && !(huge && !*huge);
  if (uses_huge && f.hugepages_total && *f.hugepages_total == 0)
    out.push_back(info("efa.hugepages_none", "node",
                       "no huge pages reserved (HugePages_Total 0 in /proc/meminfo) on a node "
                       "with EFA: libfabric's EFA provider takes its internal buffers from the "
                       "huge page pool by default (fi_efa(7)); the aws-efa-installer reserves "
                       "some",
                       "reserve huge pages ('sysctl -w vm.nr_hugepages=5128' as the "
                       "aws-efa-installer does) or set FI_EFA_USE_HUGE_PAGE=0"));
  else if (uses_huge && f.hugepages_total && *f.hugepages_total > 0 && f.hugepages_free &&
           *f.hugepages_free == 0)
    out.push_back(warn("efa.hugepages_exhausted", "node",
                       "all " + std::to_string(*f.hugepages_total) +
                           " huge pages are in use (HugePages_Free 0): the next libfabric EFA "
                           "endpoint cannot take its buffers from the pool (fi_efa(7): huge "
                           "pages 'can cause system to run out of huge page memory')",
                       "reserve more ('sysctl -w vm.nr_hugepages=<n>'), find the holder "
                       "('grep -l huge /proc/*/maps'), or set FI_EFA_USE_HUGE_PAGE=0"));
}

}  // namespace

std::vector<Finding> judge_efa(const EfaFacts& f) {
  std::vector<Finding> out;
  if (f.on_aws && !f.instance && f.devices.empty())
    out.push_back(info("efa.instance_not_in_table", "node",
                       "AWS instance '" + f.product_name.value_or("") +
                           "' is not in fabcheck's EFA table and has no EFA device: EFA is not "
                           "judged",
                       "if the type supports EFA, attach EFA interfaces at launch"));
  judge_count(f, out);
  judge_ports(f, out);
  judge_settings(f, out);
  return out;
}

Json to_json(const EfaFacts& f) {
  auto opt = [](const auto& v) { return v ? Json(*v) : Json(nullptr); };
  Json devices = Json::array();
  for (const auto& d : f.devices)
    devices.push_back(
        {{"name", d.name},
         {"state", d.state ? Json(verbs::to_string(*d.state)) : Json(nullptr)},
         {"phys_state", d.phys_state ? Json(verbs::to_string(*d.phys_state)) : Json(nullptr)},
         {"bus_id", d.bus_id.empty() ? Json(nullptr) : Json(d.bus_id)},
         {"numa_node", opt(d.numa_node)},
         {"nearest_gpu", opt(d.nearest_gpu)},
         {"nearest_gpu_path",
          d.nearest_gpu_path.empty() ? Json(nullptr) : Json(d.nearest_gpu_path)}});
  Json instance = nullptr;
  if (f.instance)
    instance = {{"name", f.instance->name},
                {"efa_devices", f.instance->efa_devices},
                {"device_rdma", f.instance->device_rdma},
                {"accelerators", f.instance->accelerators},
                {"accelerator", f.instance->accelerator},
                {"source", f.instance->source}};
  return {{"sys_vendor", opt(f.sys_vendor)},
          {"product_name", opt(f.product_name)},
          {"on_aws", f.on_aws},
          {"instance", instance},
          {"device_count", static_cast<int>(f.devices.size())},
          {"devices", devices},
          {"topology_known", f.topology_known},
          {"hugepages_total", opt(f.hugepages_total)},
          {"hugepages_free", opt(f.hugepages_free)},
          {"hugepage_size_kb", opt(f.hugepage_size_kb)},
          {"kernel_release", opt(f.kernel_release)},
          {"settings", f.settings}};
}

}  // namespace fabkit::probes
