#include "common/roots.h"

#include "common/root_open.h"

namespace fabkit {

SystemRoots SystemRoots::under(const std::filesystem::path& dir) {
  SystemRoots r;
  r.root = dir;
  r.sys = dir / "sys";
  r.proc = dir / "proc";
  r.dev = dir / "dev";
  r.etc = dir / "etc";
  r.home = dir / "root";
  r.live = false;
  r.tree = confine_reads_under(dir);
  return r;
}

SystemRoots SystemRoots::live_system(const std::string& home_dir) {
  SystemRoots r;
  r.home = home_dir;
  return r;
}

}  // namespace fabkit
