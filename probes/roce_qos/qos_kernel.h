// The two kernel interfaces the RoCE QoS gather talks to, as a seam: one rtnetlink exchange for
// DCB (RTM_GETDCB) and the SIOCETHTOOL ioctl. The live implementation talks to this kernel; the
// replay (qos_replay.cc) plays the kernel's side from a fixture, building the same netlink replies
// and filling the same ioctl buffers, so the parsers run unchanged on recorded answers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/file_reader.h"
#include "common/json.h"

namespace fabkit::probes {

class QosKernel {
 public:
  virtual ~QosKernel() = default;
  // Sends one netlink request (a whole message) and returns the reply messages' bytes, or the
  // call that failed (socket, sendto, poll timeout, recv).
  virtual Expected<std::vector<uint8_t>> netlink_exchange(const std::vector<uint8_t>& request) = 0;
  // ioctl(SIOCETHTOOL) on `ifname` with `cmd` (an ethtool_* command struct); 0 or the errno.
  virtual int ethtool_ioctl(const std::string& ifname, void* cmd) = 0;
  // A replay's statistics were recorded this far apart (its "interval_ms"); the live kernel
  // returns nullopt and the gather waits for real.
  virtual std::optional<int> recorded_interval_ms() const { return std::nullopt; }
};

// This machine's kernel. Every netlink wait is bounded by timeout_ms.
std::unique_ptr<QosKernel> make_live_qos_kernel(int timeout_ms = 1000);

// A fixture's answers (the format is in tests/fixtures/roce_qos/README.md). Throws UsageError
// naming `what` and the field when the document is not that format.
std::unique_ptr<QosKernel> make_replay_qos_kernel(const Json& fixture, const std::string& what);
// Reads FILE (--qos-replay) and makes the replay; UsageError naming the file on any problem.
std::unique_ptr<QosKernel> load_replay_qos_kernel(const std::filesystem::path& file);

}  // namespace fabkit::probes
