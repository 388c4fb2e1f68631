// The real OfiApi over the node's libfabric, dlopen'd at run time (never linked: a node without
// libfabric still runs fabcheck, and says so). Built when FABKIT_HAVE_LIBFABRIC (the headers were
// found); without them make_libfabric_api() answers "not built with libfabric".
//
// Which file: libfabric.so.1 from the first trusted directory that has one, in the order
// libfabric_search_dirs() gives: the absolute LD_LIBRARY_PATH entries (how jobs on EFA nodes
// reach the EFA installer's /opt/amazon/efa/lib), then /opt/amazon/efa/lib64 and lib, then the
// system library directories. A directory must pass common/trusted_path.h (root runs this), and a
// relative entry, the current directory and the temporary directories are never searched.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/environment.h"
#include "ofi/ofi_api.h"

namespace fabkit::ofi {

std::unique_ptr<OfiApi> make_libfabric_api(const Environment& env);

// The directories searched, in order, before the trust check (pure: tested on its own).
std::vector<std::string> libfabric_search_dirs(const Environment& env);

// A directory never searched whatever LD_LIBRARY_PATH says: relative, or a temporary directory.
bool never_searched(const std::string& dir);

// The loaded library's entry points, for the RDM test's child (fabric/ofi_rdm): the fi_* calls
// that are exported functions (fi_domain, fi_endpoint, fi_send ... are inline calls through the
// objects' ops tables and need no symbol). Null `handle` with `error` when it could not be loaded.
struct LibfabricEntry {
  std::shared_ptr<void> handle;
  std::string path;
  std::string error;
  void* getinfo = nullptr;   // int fi_getinfo(uint32_t, const char*, const char*, uint64_t,
                             //                const fi_info*, fi_info**)
  void* freeinfo = nullptr;  // void fi_freeinfo(fi_info*)
  void* dupinfo = nullptr;   // fi_info* fi_dupinfo(const fi_info*)
  void* fabric = nullptr;    // int fi_fabric(fi_fabric_attr*, fid_fabric**, void*)
  void* version = nullptr;   // uint32_t fi_version(void)
  void* strerror = nullptr;  // const char* fi_strerror(int)
  void* tostr = nullptr;     // char* fi_tostr(const void*, enum fi_type)
};
LibfabricEntry load_libfabric(const Environment& env);

}  // namespace fabkit::ofi
