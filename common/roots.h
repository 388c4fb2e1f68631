// Injectable system roots: every reader of /sys, /proc, /dev, /etc (and the user's home, for
// ~/.nccl.conf) goes through these, so a fixture tree can stand in for the machine
// (`fabcheck node --sysroot DIR`).
#pragma once

#include <filesystem>
#include <string>

namespace fabkit {

struct SystemRoots {
  std::filesystem::path root = "/";  // for /.dockerenv, /run/.containerenv
  std::filesystem::path sys = "/sys";
  std::filesystem::path proc = "/proc";
  std::filesystem::path dev = "/dev";
  std::filesystem::path etc = "/etc";
  std::filesystem::path home;  // empty: none known (HOME unset)
  bool live = true;            // false under --sysroot: syscalls (getrlimit, getifaddrs, statvfs
                               // on /dev/shm) must not describe this machine as the fixture's

  // DIR/sys, DIR/proc, DIR/dev, DIR/etc, DIR/root as home; live = false.
  static SystemRoots under(const std::filesystem::path& dir);
  static SystemRoots live_system(const std::string& home_dir);
};

}  // namespace fabkit
