// Node baselines for the `pcie` and `kernel_log` sections: a device whose link got worse than in
// the saved report, a GPU/NIC/NVSwitch gone from the bus, AER totals that rose, Xids new since
// the saved report. A pure judge over two node report documents, like node_baseline.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"

namespace fabkit::reports::baseline {

struct PcieLinkRow {
  std::string bus_id, role;
  bool old_present = false, new_present = false;
  std::optional<int> old_gen, old_lanes, new_gen, new_lanes;
  std::string new_status;  // the new report's link status ("ok", "width_degraded", ...)
  // AER totals: correctable, non-fatal, fatal.
  std::optional<double> old_aer[3], new_aer[3];
};

struct XidRow {
  int xid = 0;
  std::string bus_id, cls;  // cls from the newer report when it has the Xid
  int old_count = 0, new_count = 0;
  bool on_gpu = true;  // the newer report found a GPU at bus_id (xids[].on_gpu)
};

struct PcieBaseline {
  std::vector<PcieLinkRow> links;  // selected devices and bridges, by bus id
  std::vector<XidRow> xids;
  std::vector<Finding> findings;
};

// Reports without the sections (written before they existed) compare as empty: nothing is
// claimed about them. Throws std::invalid_argument naming the document and field of a wrong type.
PcieBaseline compare_pcie_baseline(const Json& old_doc, const Json& new_doc);
Json pcie_baseline_to_json(const PcieBaseline& b);
std::string pcie_baseline_table_text(const PcieBaseline& b);

}  // namespace fabkit::reports::baseline
