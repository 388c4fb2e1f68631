// Section 2 of a fabtrain run: before any communicator exists, apply the profile's environment
// for this host and check the node against the profile (what `fabcheck validate` does).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/finding.h"
#include "trainer/app/train_log.h"
#include "trainer/distributed/device_choice.h"

namespace fabkit::trainer {

// The node disagrees with the profile (findings at warn or worse) and --skip-validate is off.
class ValidationRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct FabricSetup {
  std::string host;
  std::vector<std::string> applied;  // "NCCL_SOCKET_IFNAME=eth1"
  std::vector<Finding> findings;
  std::string gloo_socket_ifname;    // from the environment after applying the profile
  std::optional<uint16_t> rendezvous_port;  // the profile has none yet: always empty
  std::vector<GpuNicLocality> locality;     // the profile's GPU<->NIC rows for this host
};

FabricSetup setup_fabric(const std::string& profile_path, bool skip_validate, const TrainLog& log);

}  // namespace fabkit::trainer
