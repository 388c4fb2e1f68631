#include "fabric/agent/agent_ofi.h"

#include <stdexcept>

#include "common/environment.h"
#include "fabric/agent/agent_rdma.h"
#include "fabric/ofi_rdm/ofi_rdm_test.h"
#include "fabric/tcp/tcp_socket.h"
#include "fabric/wire/messages.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::agent {
namespace {

// An endpoint address is tens of bytes (efa: a GID and a QPN; tcp: a sockaddr), hex-encoded.
constexpr uint32_t kMaxAddressFrameBytes = 4096;

std::string swap_address(int fd, const std::string& mine, int timeout_ms) {
  auto deadline = wire::deadline_in_ms(timeout_ms);
  wire::write_frame(fd, wire::make_frame(wire::Request{1, "ofi_address", {{"address", mine}}}),
                    deadline);
  wire::Frame f = wire::read_frame(fd, deadline, kMaxAddressFrameBytes);
  if (f.type == wire::FrameType::kError) {
    auto e = wire::parse_error(f);
    throw std::runtime_error("peer: " + e.code + ": " + e.message);
  }
  wire::Request r = wire::parse_request(f);
  if (r.op != "ofi_address") throw std::runtime_error("expected ofi_address, got '" + r.op + "'");
  return wire::get_string(r.args, "address", 1024);
}

}  // namespace

Json run_ofi_op(const OfiArgs& a, const std::string& token) {
  Json out = {{"role", a.role}, {"provider_asked", a.provider}};
  fabric::ofi_rdm::OfiRdmSpec s;
  s.provider = a.provider;
  s.server = a.role == "server";
  // tcp and other socket providers bind the address the controller chose for this pair; EFA's
  // endpoints are on the device, whatever IP addresses the host has.
  s.local_node = a.provider == "efa" ? "" : a.local_addr;
  s.bw_size_bytes = a.bw_size_bytes;
  s.bw_messages = a.bw_messages;
  s.window = a.window;
  s.lat_iters = a.lat_iters;
  s.warmup_iters = a.warmup_iters;
  s.timeout_ms = a.timeout_ms;
  wire::Fd ch;
  try {
    ch = open_peer_channel({s.server, a.local_addr, a.peer_addr, a.port, a.timeout_ms, "ofi_rdm"},
                           token);
  } catch (const std::exception& e) {
    fabric::ofi_rdm::OfiRdmResult r;
    r.code = "channel";
    r.reason = std::string("endpoint channel: ") + e.what();
    out.update(fabric::ofi_rdm::to_json(r));
    out["channel"] = "failed";
    return out;
  }
  tcp::set_nodelay(ch.get());
  auto r =
      fabric::ofi_rdm::run_ofi_rdm(s, Environment::from_process(), [&](const std::string& mine) {
        try {
          return swap_address(ch.get(), mine, a.timeout_ms);
        } catch (const wire::WireError& e) {
          throw std::runtime_error(e.what());
        }
      });
  out.update(fabric::ofi_rdm::to_json(r));
  out["channel"] = "ok";
  return out;
}

}  // namespace fabkit::agent
