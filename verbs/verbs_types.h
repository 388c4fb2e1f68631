// Plain values of the verbs world, with the numeric codes libibverbs and the kernel use, so a
// value read from hardware, from sysfs ("4: ACTIVE") or from a fixture means the same thing.
// Enums have fixed underlying types: an out-of-range code from a newer driver is still a valid
// value and verbs_strings.h prints it as "unknown (N)" instead of guessing.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fabkit::verbs {

enum class PortState : int {  // enum ibv_port_state
  kNop = 0, kDown = 1, kInit = 2, kArmed = 3, kActive = 4, kActiveDefer = 5
};
enum class PhysState : int {  // IBTA PortPhysicalState (ibv_port_attr.phys_state)
  kSleep = 1, kPolling = 2, kDisabled = 3, kPortConfigurationTraining = 4, kLinkUp = 5,
  kLinkErrorRecovery = 6, kPhyTest = 7
};
enum class LinkLayer : int { kUnspecified = 0, kInfiniBand = 1, kEthernet = 2 };
enum class Mtu : int { k256 = 1, k512 = 2, k1024 = 3, k2048 = 4, k4096 = 5 };  // enum ibv_mtu
// ibv_port_attr.active_speed bits; XDR (256) only fits rdma-core's newer active_speed_ex.
enum class Speed : int {
  kSdr = 1, kDdr = 2, kQdr = 4, kFdr10 = 8, kFdr = 16, kEdr = 32, kHdr = 64, kNdr = 128, kXdr = 256
};
enum class Width : int { k1x = 1, k4x = 2, k8x = 4, k12x = 8, k2x = 16 };  // active_width bits
enum class GidType : int { kIb = 0, kRoceV1 = 1, kRoceV2 = 2 };           // enum ibv_gid_type

using Gid = std::array<uint8_t, 16>;

struct DeviceAttr {
  std::string name;       // "mlx5_0"
  std::string fw_ver;     // "20.31.1014"
  std::string node_guid;  // "b859:9f03:00d6:5b3e" (ibv_devinfo / sysfs layout)
  int phys_port_cnt = 0;
};

struct PortAttr {
  PortState state = PortState::kNop;
  PhysState phys_state = PhysState::kSleep;
  LinkLayer link_layer = LinkLayer::kUnspecified;
  Speed active_speed = Speed::kSdr;
  Width active_width = Width::k1x;
  Mtu active_mtu = Mtu::k256;
  Mtu max_mtu = Mtu::k256;
  uint16_t lid = 0;
  uint16_t sm_lid = 0;
  int gid_tbl_len = 0;
};

struct GidEntry {
  int index = 0;
  Gid gid{};
  GidType type = GidType::kIb;
  std::string netdev;  // empty when the GID has no net device (IB GIDs) or it is not in this
                       // network namespace
  // The kernel's ifindex of the GID's net device, in the namespace that device lives in (0: none
  // or unknown). Non-zero with `netdev` empty: the device exists, but not in this namespace.
  uint32_t netdev_ifindex = 0;
};

// GID text: parse accepts any IPv6 text form (sysfs/ibv_devinfo's full hex
// "fe80:0000:...:5b3e" and the compressed "::ffff:192.168.1.5"); format gives the full hex form
// that sysfs gids/N shows.
std::optional<Gid> parse_gid(const std::string& text);
std::string format_gid(const Gid& gid);
bool is_zero(const Gid& gid);
// ::ffff:a.b.c.d: a RoCE v2 GID built from an IPv4 address (routable over IPv4 networks).
bool is_ipv4_mapped(const Gid& gid);
std::string ipv4_of(const Gid& gid);  // "192.168.1.5"; empty unless is_ipv4_mapped
// 64-bit GUID in network byte order as the four-group hex ibv_devinfo prints.
std::string format_guid(uint64_t guid_be);

}  // namespace fabkit::verbs

namespace fabkit::verbs {

// The RoCE v2 GID NCCL's auto-selection (2.21+) prefers: an IPv4-mapped one (::ffff:a.b.c.d,
// routable on IPv4 fabrics), else any RoCE v2 entry; nullopt when the port has none. Zero GIDs
// are unused table slots and never chosen.
std::optional<int> preferred_roce_v2_gid(const std::vector<GidEntry>& gids);

}  // namespace fabkit::verbs
