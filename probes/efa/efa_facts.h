// Probe: AWS Elastic Fabric Adapter. The instance type from DMI (no network call: the metadata
// service is not asked), the EFA devices the rdma probe found (driver "efa") with their PCI
// function, NUMA node and nearest GPU, the huge page pool libfabric's EFA provider allocates its
// buffers from, and the FI_* settings a job will run with; judged against what the instance type
// has (efa_instances.cc, a table with its sources).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "probes/probe_context.h"
#include "probes/rdma/rdma_facts.h"

namespace fabkit::topo {
struct Topology;
}

namespace fabkit::probes {

// One row of the instance table: what AWS documents for the type.
struct EfaInstanceType {
  const char* name;         // "p4d.24xlarge", as DMI product_name shows it
  int efa_devices;          // EFA interfaces at full bandwidth (one per network card)
  bool device_rdma;         // RDMA read/write on the EFA device (GPUDirect RDMA where GPUs exist)
  int accelerators;         // GPUs (or Trainium chips) of the type
  const char* accelerator;  // "A100", "H100", "Trainium", "" for none
  const char* source;       // the AWS page the row follows
};
// nullptr when the type is not in the table.
const EfaInstanceType* find_efa_instance(const std::string& product_name);
const std::vector<EfaInstanceType>& efa_instance_table();

struct EfaDevice {
  std::string name;                       // "rdmap16s27"
  std::optional<verbs::PortState> state;  // port 1 (EFA devices have one port)
  std::optional<verbs::PhysState> phys_state;
  std::string bus_id;            // PCI function, "0000:10:1b.0" (device link)
  std::optional<int> numa_node;  // device/numa_node; -1 as the kernel writes it: none
  // From the locality topology (hwloc): the GPU whose PCI path to this device is shortest.
  std::optional<std::string> nearest_gpu;  // its bus id
  std::string nearest_gpu_path;            // NCCL path level ("PIX", "PXB", "PHB", "SYS")
};

struct EfaFacts {
  // DMI as the kernel exports it (/sys/class/dmi/id): "Amazon EC2" / "p4d.24xlarge" on Nitro.
  std::optional<std::string> sys_vendor;
  std::optional<std::string> product_name;
  bool on_aws = false;
  const EfaInstanceType* instance = nullptr;  // the table's row, when known
  std::vector<EfaDevice> devices;
  bool topology_known = false;  // a locality topology was there to place GPUs
  // /proc/meminfo: the persistent huge page pool (libfabric's EFA bounce buffers).
  std::optional<long long> hugepages_total;
  std::optional<long long> hugepages_free;
  std::optional<long long> hugepage_size_kb;
  // /proc/sys/kernel/osrelease ("6.14.0-1018-aws"): whether the kernel copies DMA pages on fork
  // (5.13+), which decides whether libfabric needs fork support at all.
  std::optional<std::string> kernel_release;
  // The FI_*/RDMAV_* settings the job will see (filled from the nccl_env probe's variables).
  std::map<std::string, std::string> settings;
};

// rdma: the rdma probe's facts (EFA devices are those with driver "efa"); topology: the locality
// probe's model, or null.
EfaFacts gather_efa(const ProbeContext& ctx, const RdmaFacts& rdma, const topo::Topology* topology);
// Pure: the settings named by kEfaSettingNames from a name -> value map.
void set_efa_settings(EfaFacts& facts, const std::map<std::string, std::string>& variables);
extern const char* const kEfaSettingNames[];
// Pure parsers, exposed for tests. "HugePages_Total:    1024" lines of /proc/meminfo.
void parse_meminfo_hugepages(const std::string& text, EfaFacts& facts);

// Pure. memlock findings stay with the limits probe (it judges memlock wherever RDMA devices are,
// EFA devices included).
std::vector<Finding> judge_efa(const EfaFacts& facts);
Json to_json(const EfaFacts& facts);

// Linux 5.13 copies pinned DMA pages on fork; with rdma-core 35+ libibverbs then reports fork
// support as unneeded (libfabric prov/efa efa_fork_support.c: "Use Linux Kernel 5.13+ with
// rdma-core v35.0+"). nullopt: release unknown.
std::optional<bool> kernel_copies_dma_pages_on_fork(const EfaFacts& facts);

// libfabric's boolean spellings (fi_param_get_bool: 1/true/yes/on, 0/false/no/off).
std::optional<bool> parse_fi_bool(const std::string& value);

}  // namespace fabkit::probes
