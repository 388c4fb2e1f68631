// The instance types fabcheck knows EFA facts of. Sources (AWS EC2 User Guide):
//   [efa]   https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html#efa-instance-types
//           (supported instance types; the RDMA read/write support table)
//   [cards] https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/using-eni.html#network-cards
//           (network cards per type: one EFA interface per card at full bandwidth)
//   [p5]    https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html
//           ("P5 and P5e instances support up to 32 network cards ... 3200 Gbps"; "G6e instances
//           support up to four network cards ... 400 Gbps")
//   [fsdp]  aws-samples/awsome-distributed-training, 3.test_cases/pytorch/FSDP (the job script's
//           "For G4dn and other G5, comment out all" of the FI_* lines: no device RDMA there)
//   [ofi]   aws/aws-ofi-nccl@a090e25d tests/unit/fixtures/topology/README.md: lstopo captures of
//           p4d.24xlarge (4 EFA NICs), p5en.48xlarge (16), p6-b200.48xlarge (8),
//           p6-b300.48xlarge (16), p6e-gb200.36xlarge (16, 4 GB200)
// The counts are the EFA interfaces a type takes at full bandwidth; a type whose smaller sizes
// have no EFA is listed by the sizes that do. Rows citing only [efa]/[cards] follow those pages
// as known when written; no stored copy of [cards] was read for them (docs/efa.md).
#include "probes/efa/efa_facts.h"

namespace fabkit::probes {

const std::vector<EfaInstanceType>& efa_instance_table() {
  static const std::vector<EfaInstanceType> kTable = {
      // name, EFA devices, device RDMA, accelerators, kind, source
      {"p3dn.24xlarge", 1, false, 8, "V100", "[efa] [cards] [fsdp]"},
      {"p4d.24xlarge", 4, true, 8, "A100", "[efa] [cards] [ofi]"},
      {"p4de.24xlarge", 4, true, 8, "A100", "[efa] [cards]"},
      {"p5.48xlarge", 32, true, 8, "H100", "[efa] [cards] [p5]"},
      {"p5e.48xlarge", 32, true, 8, "H200", "[efa] [cards] [p5]"},
      {"p5en.48xlarge", 16, true, 8, "H200", "[efa] [ofi]"},
      {"p6-b200.48xlarge", 8, true, 8, "B200", "[efa] [ofi]"},
      {"p6-b300.48xlarge", 16, true, 8, "B300", "[efa] [ofi]"},
      {"p6e-gb200.36xlarge", 16, true, 4, "GB200", "[efa] [ofi]"},
      {"g4dn.8xlarge", 1, false, 1, "T4", "[efa] [fsdp]"},
      {"g4dn.12xlarge", 1, false, 4, "T4", "[efa] [fsdp]"},
      {"g4dn.16xlarge", 1, false, 1, "T4", "[efa] [fsdp]"},
      {"g4dn.metal", 1, false, 8, "T4", "[efa] [fsdp]"},
      {"g5.8xlarge", 1, false, 1, "A10G", "[efa] [fsdp]"},
      {"g5.12xlarge", 1, false, 4, "A10G", "[efa] [fsdp]"},
      {"g5.16xlarge", 1, false, 1, "A10G", "[efa] [fsdp]"},
      {"g5.24xlarge", 1, false, 4, "A10G", "[efa] [fsdp]"},
      {"g5.48xlarge", 1, false, 8, "A10G", "[efa] [fsdp]"},
      {"g6.8xlarge", 1, false, 1, "L4", "[efa]"},
      {"g6.12xlarge", 1, false, 4, "L4", "[efa]"},
      {"g6.16xlarge", 1, false, 1, "L4", "[efa]"},
      {"g6.24xlarge", 1, false, 4, "L4", "[efa]"},
      {"g6.48xlarge", 1, false, 8, "L4", "[efa]"},
      {"g6e.48xlarge", 4, false, 8, "L40S", "[efa] [p5]"},
      {"trn1.32xlarge", 8, true, 16, "Trainium", "[efa] [cards]"},
      {"trn1n.32xlarge", 16, true, 16, "Trainium", "[efa] [cards]"},
      {"c5n.18xlarge", 1, false, 0, "", "[efa]"},
      {"hpc6a.48xlarge", 1, false, 0, "", "[efa]"},
      {"hpc7g.16xlarge", 1, false, 0, "", "[efa]"},
  };
  return kTable;
}

const EfaInstanceType* find_efa_instance(const std::string& product_name) {
  for (const auto& row : efa_instance_table())
    if (product_name == row.name) return &row;
  return nullptr;
}

}  // namespace fabkit::probes
