// Listens on the rendezvous port (e.g. 29400, where torchrun's rank 0 will listen) so the peer can
// check that a connection gets through; accepts and closes connections until stopped.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "fabric/wire/socket_io.h"

namespace fabkit::agent {

class PortListener {
 public:
  PortListener(const std::string& addr, uint16_t port);  // throws wire::WireError kIo (in use...)
  ~PortListener();
  PortListener(const PortListener&) = delete;
  PortListener& operator=(const PortListener&) = delete;
  uint64_t accepted() const { return accepted_.load(); }

 private:
  wire::Fd fd_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> accepted_{0};
  std::thread thread_;
};

}  // namespace fabkit::agent
