#include "verbs/verbs_strings.h"

#include <cmath>
#include <cstdio>

namespace fabkit::verbs {
namespace {

std::string unknown(int code) { return "unknown (" + std::to_string(code) + ")"; }

struct SpeedRow {
  Speed speed;
  const char* name;
  double signal_gbps;  // per lane, on the wire
  double data_gbps;    // per lane, as the kernel's rate_show() counts it
};
constexpr SpeedRow kSpeeds[] = {
    {Speed::kSdr, "SDR", 2.5, 2.5},          {Speed::kDdr, "DDR", 5.0, 5.0},
    {Speed::kQdr, "QDR", 10.0, 10.0},        {Speed::kFdr10, "FDR10", 10.3125, 10.0},
    {Speed::kFdr, "FDR", 14.0625, 14.0},     {Speed::kEdr, "EDR", 25.78125, 25.0},
    {Speed::kHdr, "HDR", 53.125, 50.0},      {Speed::kNdr, "NDR", 106.25, 100.0},
    {Speed::kXdr, "XDR", 212.5, 200.0},
};

const SpeedRow* find_speed(Speed s) {
  for (const auto& r : kSpeeds)
    if (r.speed == s) return &r;
  return nullptr;
}

}  // namespace

std::string to_string(PortState s) {
  switch (s) {
    case PortState::kNop: return "NOP";
    case PortState::kDown: return "DOWN";
    case PortState::kInit: return "INIT";
    case PortState::kArmed: return "ARMED";
    case PortState::kActive: return "ACTIVE";
    case PortState::kActiveDefer: return "ACTIVE_DEFER";
  }
  return unknown(static_cast<int>(s));
}

std::string to_string(PhysState s) {
  switch (s) {
    case PhysState::kSleep: return "Sleep";
    case PhysState::kPolling: return "Polling";
    case PhysState::kDisabled: return "Disabled";
    case PhysState::kPortConfigurationTraining: return "PortConfigurationTraining";
    case PhysState::kLinkUp: return "LinkUp";
    case PhysState::kLinkErrorRecovery: return "LinkErrorRecovery";
    case PhysState::kPhyTest: return "Phy Test";
  }
  return unknown(static_cast<int>(s));
}

std::string to_string(LinkLayer l) {
  switch (l) {
    case LinkLayer::kUnspecified:
    case LinkLayer::kInfiniBand: return "InfiniBand";
    case LinkLayer::kEthernet: return "Ethernet";
  }
  return unknown(static_cast<int>(l));
}

std::string to_string(Mtu m) {
  int b = mtu_bytes(m);
  return b ? std::to_string(b) : unknown(static_cast<int>(m));
}

std::string to_string(Speed s) {
  const SpeedRow* r = find_speed(s);
  return r ? r->name : unknown(static_cast<int>(s));
}

std::string to_string(Width w) {
  int lanes = width_lanes(w);
  return lanes ? std::to_string(lanes) + "X" : unknown(static_cast<int>(w));
}

std::string to_string(GidType t) {
  switch (t) {
    case GidType::kIb: return "IB";
    case GidType::kRoceV1: return "RoCE v1";
    case GidType::kRoceV2: return "RoCE v2";
  }
  return unknown(static_cast<int>(t));
}

int mtu_bytes(Mtu m) {
  int code = static_cast<int>(m);
  return code >= 1 && code <= 5 ? 128 << code : 0;
}

std::optional<Mtu> mtu_from_bytes(int bytes) {
  for (int code = 1; code <= 5; ++code)
    if ((128 << code) == bytes) return static_cast<Mtu>(code);
  return std::nullopt;
}

int width_lanes(Width w) {
  switch (w) {
    case Width::k1x: return 1;
    case Width::k4x: return 4;
    case Width::k8x: return 8;
    case Width::k12x: return 12;
    case Width::k2x: return 2;
  }
  return 0;
}

double lane_signal_gbps(Speed s) {
  const SpeedRow* r = find_speed(s);
  return r ? r->signal_gbps : 0.0;
}

double rate_gbps(Speed s, Width w) {
  const SpeedRow* r = find_speed(s);
  return r ? r->data_gbps * width_lanes(w) : 0.0;
}

std::string rate_string(Speed s, Width w) {
  double g = rate_gbps(s, w);
  if (g <= 0) return "unknown rate (speed " + describe(s) + ", width " + describe(w) + ")";
  char num[32];
  // The kernel prints whole numbers, or ".5" (1X SDR = 2.5 Gb/sec).
  if (g == std::floor(g))
    snprintf(num, sizeof num, "%.0f", g);
  else
    snprintf(num, sizeof num, "%.1f", g);
  return std::string(num) + " Gb/sec (" + to_string(w) + " " + to_string(s) + ")";
}

std::optional<PortState> port_state_from_name(const std::string& n) {
  for (int c = 0; c <= 5; ++c)
    if (to_string(static_cast<PortState>(c)) == n) return static_cast<PortState>(c);
  return std::nullopt;
}

std::optional<PhysState> phys_state_from_name(const std::string& n) {
  for (int c = 1; c <= 7; ++c)
    if (to_string(static_cast<PhysState>(c)) == n) return static_cast<PhysState>(c);
  return std::nullopt;
}

std::optional<LinkLayer> link_layer_from_name(const std::string& n) {
  if (n == "InfiniBand") return LinkLayer::kInfiniBand;
  if (n == "Ethernet") return LinkLayer::kEthernet;
  return std::nullopt;
}

std::optional<GidType> gid_type_from_name(const std::string& n) {
  for (int c = 0; c <= 2; ++c)
    if (to_string(static_cast<GidType>(c)) == n) return static_cast<GidType>(c);
  return std::nullopt;
}

}  // namespace fabkit::verbs
