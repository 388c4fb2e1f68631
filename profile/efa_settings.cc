// The libfabric settings of a profile on EFA hosts. What the AWS FSDP guide's job script sets
// (aws-samples/awsome-distributed-training@7217859f, 3.test_cases/pytorch/FSDP/slurm/
// llama2_7b-training.sbatch: FI_PROVIDER=efa, "For G4dn and other G5, comment out all"; older
// revisions and its EKS manifests also FI_EFA_USE_DEVICE_RDMA=1 for p4d and FI_EFA_FORK_SAFE=1),
// decided per host from the node report's efa section, and nothing on hosts without EFA. The same
// script's two workarounds (FI_EFA_USE_HUGE_PAGE=0, FI_EFA_SET_CUDA_SYNC_MEMOPS=0) are carried
// for every EFA host, with the reasons the script and the repository's EFA cheat sheet
// (1.architectures/efa-cheatsheet.md) give.
#include <sstream>

#include "profile/builder_settings.h"

namespace fabkit::profile {
namespace {

Setting make(std::optional<std::string> value, std::string reason, std::vector<std::string> ev) {
  Setting s;
  s.value = std::move(value);
  s.basis = Basis::kInferred;
  s.reason = std::move(reason);
  s.evidence = std::move(ev);
  return s;
}

// Linux 5.13+ copies pinned DMA pages on fork: with rdma-core 35+ libfabric then needs no fork
// support; before it, a fork() with fork support off aborts the job (libfabric prov/efa
// efa_fork_support.c, "Use Linux Kernel 5.13+ with rdma-core v35.0+"). nullopt: not known.
std::optional<bool> copies_dma_pages_on_fork(const std::optional<std::string>& release) {
  if (!release) return std::nullopt;
  int major = 0, minor = 0;
  char dot = 0;
  std::istringstream in(*release);
  if (!(in >> major >> dot >> minor) || dot != '.') return std::nullopt;
  return major > 5 || (major == 5 && minor >= 13);
}

}  // namespace

void efa_settings(const std::vector<NodeFacts>& nodes, std::map<std::string, PerHost>& s) {
  for (const auto& n : nodes) {
    if (!n.efa || n.efa->devices == 0) continue;
    const std::string& h = n.hostname;
    const std::string type = n.efa->instance_type.value_or("an instance of unknown type");
    const std::vector<std::string> ev = {h + " efa: " + std::to_string(n.efa->devices) +
                                         " EFA device(s) on " + type};
    s["FI_PROVIDER"][h] = make("efa",
                               "the host has EFA devices: libfabric (and NCCL's OFI plugin) must "
                               "pick the efa provider, not tcp or sockets",
                               ev);
    if (n.efa->device_rdma == true)
      s["FI_EFA_USE_DEVICE_RDMA"][h] =
          make("1", type + " has EFA device RDMA (read/write): GPUDirect RDMA for NCCL", ev);
    else
      s["FI_EFA_USE_DEVICE_RDMA"][h] =
          make(std::nullopt,
               n.efa->device_rdma == false
                   ? type +
                         " has no EFA device RDMA: with =1 libfabric aborts the job (fi_efa(7)); "
                         "the FSDP guide comments it out on G5/G4dn/P3"
                   : type +
                         " is not in fabcheck's EFA table: left unset, libfabric uses device RDMA "
                         "where the device has it (fi_efa(7))",
               ev);
    s["FI_EFA_USE_HUGE_PAGE"][h] =
        make("0",
             "DataLoader workers fork: with libfabric's huge-page buffers a fork() can fail with "
             "'OSError: Cannot allocate memory' when the huge pages run out; the FSDP guide sets "
             "0 and calls the cost a minor slowdown",
             ev);
    s["FI_EFA_SET_CUDA_SYNC_MEMOPS"][h] =
        make("0",
             "the FSDP guide sets 0 (CU_POINTER_ATTRIBUTE_SYNC_MEMOPS off: more FSDP throughput); "
             "with efa-installer < 1.29.1 and NCCL >= 2.19 it also avoids 'NET/OFI Unable to "
             "register memory ... RC: -22' (the guide's EFA cheat sheet)",
             ev);
    const auto copy = copies_dma_pages_on_fork(n.efa->kernel_release);
    const std::string kernel = "kernel " + n.efa->kernel_release.value_or("(not in the report)");
    std::vector<std::string> fev = ev;
    fev.push_back(h + " efa: " + kernel);
    if (copy == false)
      s["FI_EFA_FORK_SAFE"][h] =
          make("1",
               kernel +
                   " does not copy DMA pages on fork: without fork support libfabric aborts "
                   "the job at the first fork() (DataLoader workers); it costs libfabric's "
                   "huge-page buffers",
               fev);
    else
      s["FI_EFA_FORK_SAFE"][h] =
          make(std::nullopt,
               copy == true ? kernel +
                                  " copies DMA pages on fork (5.13+): with rdma-core 35+ libfabric "
                                  "needs no fork support, and setting it would turn off its "
                                  "huge-page buffers (fi_efa(7))"
                            : kernel +
                                  ": whether it copies DMA pages on fork is not known; left "
                                  "unset (set it by hand before Linux 5.13)",
               fev);
  }
}

}  // namespace fabkit::profile
