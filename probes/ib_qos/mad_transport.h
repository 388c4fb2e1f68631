// The seam between the IB QoS gather and the fabric: one MAD sent from a local IB port and its
// reply. The live implementation (mad_transport_live.cc) goes through libibumad and
// /dev/infiniband/umad*; the replay (mad_replay.cc) answers from a fixture with the bytes an SMA
// and an SA would send, so the decoders (mad_codec.h) run unchanged on recorded answers.
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

// Where a MAD goes: the local port's SMA (a directed-route SMP with no hops, QP0) or the SA
// (LID-routed to the master SM's LID, QP1, with the SM's SL).
struct MadDestination {
  bool to_sa = false;
  int sm_lid = 0;
  int sm_sl = 0;
};

class MadTransport {
 public:
  virtual ~MadTransport() = default;
  // Non-empty: no MAD can be sent from this host (why, and the fix); the gather reports it as a
  // fact and sends nothing.
  virtual std::string unavailable() const = 0;
  // Sends `mad` from DEVICE:PORT and waits at most timeout_ms for the reply; the reply's bytes or
  // the call that failed (umad_open_port, umad_register, umad_send, umad_recv with ETIMEDOUT...).
  virtual Expected<std::vector<uint8_t>> exchange(const std::string& device, int port,
                                                  const MadDestination& to,
                                                  const std::vector<uint8_t>& mad,
                                                  int timeout_ms) = 0;
};

// This host's umad devices under dev_root (/dev/infiniband/umad*), through libibumad.
std::unique_ptr<MadTransport> make_live_mad_transport(const std::filesystem::path& dev_root);

// A fixture's answers (tests/fixtures/ib_qos/README.md); UsageError naming `what` and the field
// when the document is not that format.
std::unique_ptr<MadTransport> make_replay_mad_transport(const Json& fixture,
                                                        const std::string& what);
// Reads FILE (--ib-qos-replay) and makes the replay; UsageError naming the file on any problem.
std::unique_ptr<MadTransport> load_replay_mad_transport(const std::filesystem::path& file);

}  // namespace fabkit::probes
