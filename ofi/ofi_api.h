// The libfabric seam: what `fabcheck node` asks libfabric (fi_version, and fi_getinfo for reliable
// datagram endpoints), behind an interface so the same probe runs against the node's real
// libfabric (libfabric_api.h, dlopen'd from a trusted library directory) and against answers
// recorded on an EFA instance (replay_ofi_api.h, `fabcheck node --ofi-replay FILE`).
//
// Nothing here includes libfabric's headers: a build without them still has the types, the replay
// and the judge, and says "not built with libfabric" for a live node.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fabkit::ofi {

// The capability bits the judges read, by libfabric's names (fabric.h FI_MSG, FI_RMA, FI_TAGGED,
// FI_HMEM). aws-ofi-nccl needs FI_TAGGED and FI_MSG on an FI_EP_RDM endpoint, and FI_HMEM with
// FI_RMA for GPUDirect RDMA (aws/aws-ofi-nccl README, "Requirements").
inline constexpr char kCapMsg[] = "FI_MSG";
inline constexpr char kCapRma[] = "FI_RMA";
inline constexpr char kCapTagged[] = "FI_TAGGED";
inline constexpr char kCapHmem[] = "FI_HMEM";

// One fi_info of fi_getinfo's answer: one provider on one domain (an EFA instance lists one efa
// entry per EFA device; tcp one per interface).
struct OfiProvider {
  std::string name;                  // fabric_attr->prov_name: "efa", "tcp;ofi_rxm"
  std::string fabric;                // fabric_attr->name: "efa", "EFA-fe80::...", "192.0.2.0/24"
  std::string domain;                // domain_attr->name: "rdmap16s27-rdm", "eth0"
  std::string version;               // fabric_attr->prov_version as fi_info prints it: "111.20"
  std::string endpoint_type;         // "FI_EP_RDM"
  std::vector<std::string> caps;     // the kCap* bits the provider offers, in that order
  std::vector<std::string> mr_mode;  // domain_attr->mr_mode bits: "FI_MR_LOCAL", "FI_MR_HMEM"
  bool has_cap(const std::string& cap) const;
};

// The library itself: where it was loaded from, or why it was not.
struct OfiLibrary {
  bool loaded = false;
  std::string path;         // the file dlopen'd
  std::string version;      // fi_tostr(FI_TYPE_VERSION): the library's release, "1.17.0"
  std::string api_version;  // fi_version(): "1.17"
  std::string error;        // not loaded: no trusted libfabric.so.1, dlopen's or dlsym's message
};

struct OfiDiscovery {
  OfiLibrary library;
  // fi_getinfo(FI_EP_RDM): every RDM provider on every domain. -FI_ENODATA is an empty list, not
  // an error (what `fi_info` prints as "fi_getinfo: -61").
  std::vector<OfiProvider> providers;
  std::optional<std::string> getinfo_error;  // any other failure, with fi_strerror's text
  std::string source;                        // "libfabric" (live) or the replay file
};

class OfiApi {
 public:
  virtual ~OfiApi() = default;
  // Never throws for a library that is missing, fails to load or returns an error: those are
  // facts in the answer.
  virtual OfiDiscovery discover() = 0;
};

// "1.17" from a FI_VERSION(major, minor) value.
std::string version_text(uint32_t fi_version_value);
// Major and minor of "1.17.0", "1.22.0amzn4.0", "1.11"; nullopt when it does not start with them.
std::optional<std::pair<int, int>> parse_major_minor(const std::string& text);

}  // namespace fabkit::ofi
