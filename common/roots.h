// Injectable system roots: every reader of /sys, /proc, /dev, /etc (and the user's home, for
// ~/.nccl.conf) goes through these, so a fixture tree can stand in for the machine
// (`fabcheck node --sysroot DIR`).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

namespace fabkit {

class ConfinedTree;  // common/root_open.h

struct SystemRoots {
  std::filesystem::path root = "/";  // for /.dockerenv, /run/.containerenv
  std::filesystem::path sys = "/sys";
  std::filesystem::path proc = "/proc";
  std::filesystem::path dev = "/dev";
  std::filesystem::path etc = "/etc";
  std::filesystem::path home;  // empty: none known (HOME unset)
  bool live = true;            // false under --sysroot: syscalls (getrlimit, getifaddrs, statvfs
                               // on /dev/shm) must not describe this machine as the fixture's
  // Under --sysroot: every read under root resolves inside it (common/root_open.h) while this
  // lives; what it refused is what the node report names. Null on the live system.
  std::shared_ptr<const ConfinedTree> tree;

  // DIR/sys, DIR/proc, DIR/dev, DIR/etc, DIR/root as home; live = false; reads confined to DIR.
  static SystemRoots under(const std::filesystem::path& dir);
  static SystemRoots live_system(const std::string& home_dir);
};

}  // namespace fabkit
