// Runs the RoCE QoS gather's kernel half (DCB over rtnetlink, ethtool statistics over
// SIOCETHTOOL, read twice) on the netdevs named on the command line, in the caller's network
// namespace, and prints what it read as JSON. The integration test runs it inside a namespace.
// usage: roce_qos_read INTERVAL_MS NETDEV...
#include <cstdlib>
#include <iostream>

#include "probes/roce_qos/ethtool_stats.h"
#include "probes/roce_qos/qos_kernel.h"
#include "probes/roce_qos/roce_qos_facts.h"

int main(int argc, char** argv) {
  using namespace fabkit::probes;
  if (argc < 3) {
    std::cerr << "usage: roce_qos_read INTERVAL_MS NETDEV...\n";
    return 2;
  }
  RoceQosFacts f;
  f.kernel = make_live_qos_kernel(1000);
  f.counter_interval_ms = 0;
  for (int i = 2; i < argc; ++i) {
    RoceQosPort p;
    p.device = "none";
    p.netdev = argv[i];
    p.dcb = read_dcb(*f.kernel, p.netdev);
    p.ethtool = read_ethtool_counters(*f.kernel, p.netdev);
    f.ports.push_back(p);
  }
  f.first_read = std::chrono::steady_clock::now();
  reread_roce_qos(f, std::atoi(argv[1]));
  fabkit::Json out = to_json(f);
  // Every counter of the last read as the ioctl returned it, kept by the probe or not, so the
  // test can compare values with ethtool(8) (veth's peer_ifindex is the one that is not zero).
  fabkit::Json raw = fabkit::Json::object();
  for (int i = 2; i < argc; ++i) {
    auto r = read_ethtool_stats(*f.kernel, argv[i]);
    fabkit::Json one = fabkit::Json::object();
    for (size_t k = 0; k < r.names.size(); ++k) one[r.names[k]] = r.values[k];
    raw[argv[i]] = one;
  }
  out["raw_ethtool"] = raw;
  std::cout << out.dump(1) << "\n";
  return 0;
}
