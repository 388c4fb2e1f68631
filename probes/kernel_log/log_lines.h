// The shapes of the driver lines the kernel log probe counts, each matched from the first byte of
// a record's message (after the prefixes log_records.cc strips), never as a phrase anywhere in
// it. Pure; used by log_events.cc.
//
// Why the start, and only the start: a kernel record may quote text a user chose. The kernel's
// own segfault report ("python3[1234]: segfault at 0 ip … error 4 in NAME[7f00+1000]",
// arch/x86/mm/fault.c show_signal_msg with mm/memory.c print_vma_addr) quotes the name of the
// faulting mapping, which is any file a user can create, so a file named "NVRM: Xid (PCI:…): 79"
// put the driver's words into a record the kernel printed. What a user controls at the start of
// a kernel record is a process name (comm, at most 15 bytes) followed by "[pid]"; every grammar
// below is longer than that before its first free-form byte, or must end where the driver's text
// ends (the link lines), so a comm cannot complete one. A newline in a file name stays inside
// the one record (/dev/kmsg escapes it as \x0a), so only the record's first line is a start.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fabkit::probes {

// "0000:18:00.0" for a bus id with or without a function, and with the "PCI:" Xid lines put in
// front ("PCI:0000:18:00"); nullopt when the text is not one.
std::optional<std::string> log_bus_id(std::string_view text);

// "<driver> <bus id>[ <name>]: " at the start of a message: what dev_printk writes
// (drivers/base/core.c: dev_driver_string, dev_name), with netdev_printk's interface name and
// ibdev_printk's RDMA device name after the bus id. nullopt when the message does not start so.
struct DevicePrefix {
  std::string_view driver;  // "pcieport", "mlx5_core", "nvidia"
  std::string bus;          // normalised: "0000:00:02.0"
  std::string_view name;    // "eth4", "mlx5_5"; empty without one
  std::string_view rest;    // the message after "<...>: "
};
std::optional<DevicePrefix> device_prefix(std::string_view message);

// "NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python3, GPU has fallen off the bus."
// (open-gpu-kernel-modules nverror.c; older drivers omit "PCI:" and pid/name).
struct XidLine {
  int xid = 0;
  std::string bus;     // normalised
  std::string detail;  // the first line after "79, "
};
std::optional<XidLine> parse_xid_line(std::string_view message);

// A GPU off the bus without an Xid, as newer drivers print it: "NVRM: GPU at PCI:0000:01:00 has
// fallen off the bus.", "NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.", and the
// multi-line "NVRM: The NVIDIA GPU 0000:b3:00.0 / (PCI ID: 10de:26b5) installed in this system
// has / fallen off the bus" (NVIDIA/NVSentinel#155). The GPU's bus id; nullopt when not one.
std::optional<std::string> parse_off_bus_line(std::string_view message);

// A link going down or coming up: "mlx5_core 0000:42:00.1 eth4: Link down", "igc 0000:05:00.0
// eth5: NIC Link is Down", "pcieport 0000:00:1c.0: pciehp: Slot(1): Link Down", "mlx5_core
// 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE", "mlx4_en: enp1s0: Link Down", "bond0: link status
// definitely down for interface eno50, disabling it" (and the newer "bond0: (slave eno50): link
// status definitely down, disabling slave"). A down line must end where the driver's text ends.
struct LinkLine {
  bool down = false;
  std::string device;  // the bus id, the bond member, or the interface named
};
std::optional<LinkLine> parse_link_line(std::string_view message);

}  // namespace fabkit::probes
