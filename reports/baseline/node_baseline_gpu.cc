// GPU health in node baselines: what the GPUs' error counters gained since the saved run. GPUs
// are matched by UUID (stable across reboots and PCI renumbering), else by bus id. ECC counts
// compare the aggregate counters (the board's life, kept across driver reloads) where both
// reports have them, else the volatile ones: a volatile count lower than the baseline's means the
// driver reloaded in between, so all of today's count is new.
#include <map>
#include <stdexcept>

#include "reports/baseline/node_baseline.h"

namespace fabkit::reports::baseline {
namespace {

const Json kNull;
const Json& at(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) ? j[key] : kNull;
}

std::optional<double> count(const Json& j, const char* key, const std::string& where) {
  const Json& v = at(j, key);
  if (v.is_null()) return std::nullopt;
  if (!v.is_number()) throw std::invalid_argument(where + "." + key + " must be a number");
  return v.get<double>();
}

struct GpuCounts {
  std::string name;  // "GPU 3 (0000:9a:00.0)"
  std::optional<double> ecc_unc_agg, ecc_corr_agg, ecc_unc_vol, ecc_corr_vol;
  std::optional<double> rows;         // remapped rows, both causes
  std::optional<double> nvlink_errs;  // all NVLink error counters of all links
};

std::map<std::string, GpuCounts> gpus_of(const Json& doc, const std::string& which) {
  std::map<std::string, GpuCounts> out;
  const Json& devices = at(at(doc, "gpus"), "devices");
  if (devices.is_null()) return out;
  if (!devices.is_array()) throw std::invalid_argument(which + ": gpus.devices must be an array");
  for (size_t i = 0; i < devices.size(); ++i) {
    const Json& d = devices[i];
    const std::string w = which + ": gpus.devices[" + std::to_string(i) + "]";
    std::string uuid = at(d, "uuid").is_string() ? d["uuid"].get<std::string>() : "";
    std::string bus = at(d, "bus_id").is_string() ? d["bus_id"].get<std::string>() : "";
    std::string key = !uuid.empty() ? uuid : bus;
    if (key.empty()) continue;
    const Json& h = at(d, "health");
    const std::string hw = w + ".health";
    GpuCounts c;
    auto index = count(d, "index", w);
    c.name = "GPU " + (index ? std::to_string(static_cast<int>(*index)) : std::string("?")) +
             (bus.empty() ? "" : " (" + bus + ")");
    const Json& ecc = at(h, "ecc");
    c.ecc_unc_agg = count(at(ecc, "aggregate"), "uncorrected", hw + ".ecc.aggregate");
    c.ecc_corr_agg = count(at(ecc, "aggregate"), "corrected", hw + ".ecc.aggregate");
    c.ecc_unc_vol = count(at(ecc, "volatile"), "uncorrected", hw + ".ecc.volatile");
    c.ecc_corr_vol = count(at(ecc, "volatile"), "corrected", hw + ".ecc.volatile");
    if (at(h, "remapped_rows").is_object()) {
      auto corr = count(h["remapped_rows"], "corrected", hw + ".remapped_rows");
      auto unc = count(h["remapped_rows"], "uncorrected", hw + ".remapped_rows");
      if (corr || unc) c.rows = corr.value_or(0) + unc.value_or(0);
    }
    if (at(h, "nvlinks").is_array()) {
      double sum = 0;
      for (const auto& l : h["nvlinks"])
        for (const char* k : {"replay", "recovery", "crc_flit", "crc_data"})
          sum += count(l, k, hw + ".nvlinks[]").value_or(0);
      c.nvlink_errs = sum;
    }
    out[key] = c;
  }
  return out;
}

// New errors between two readings of one counter; nullopt when either is unknown.
std::optional<double> gained(const std::optional<double>& agg_old,
                             const std::optional<double>& agg_new,
                             const std::optional<double>& vol_old,
                             const std::optional<double>& vol_new, std::string* counter) {
  if (agg_old && agg_new) {
    *counter = "aggregate";
    return *agg_new > *agg_old ? *agg_new - *agg_old : 0;
  }
  if (vol_old && vol_new) {
    *counter = "volatile";
    return *vol_new >= *vol_old ? *vol_new - *vol_old : *vol_new;  // reloaded: all of it is new
  }
  return std::nullopt;
}

std::string n(double v) { return std::to_string(static_cast<long long>(v)); }

}  // namespace

std::vector<GpuHealthRow> compare_gpu_health(const Json& old_doc, const Json& new_doc,
                                             std::vector<Finding>& findings) {
  auto olds = gpus_of(old_doc, "old");
  auto news = gpus_of(new_doc, "new");
  std::vector<GpuHealthRow> rows;
  for (const auto& [key, now] : news) {
    auto it = olds.find(key);
    if (it == olds.end()) continue;  // a new GPU: nothing to compare against
    const GpuCounts& was = it->second;
    GpuHealthRow row;
    row.gpu = now.name;
    row.uuid = key;
    row.ecc_uncorrected_new = gained(was.ecc_unc_agg, now.ecc_unc_agg, was.ecc_unc_vol,
                                     now.ecc_unc_vol, &row.ecc_counter);
    std::string corr_counter;
    row.ecc_corrected_new = gained(was.ecc_corr_agg, now.ecc_corr_agg, was.ecc_corr_vol,
                                   now.ecc_corr_vol, &corr_counter);
    if (was.rows && now.rows)
      row.remapped_rows_new = *now.rows > *was.rows ? *now.rows - *was.rows : 0;
    // NVLink counters reset when the driver loads: a lower total is a reload, not "no errors".
    if (was.nvlink_errs && now.nvlink_errs)
      row.nvlink_errors_new = *now.nvlink_errs >= *was.nvlink_errs
                                  ? *now.nvlink_errs - *was.nvlink_errs
                                  : *now.nvlink_errs;
    if (!row.ecc_uncorrected_new && !row.ecc_corrected_new && !row.remapped_rows_new &&
        !row.nvlink_errors_new)
      continue;  // no counter in both reports (a lost GPU, a GPU without ECC or NVLink)
    const std::string ecc_cmd = "`nvidia-smi -q -d ECC,ROW_REMAPPER`";
    if (row.ecc_uncorrected_new.value_or(0) > 0)
      findings.push_back(fail("baseline.gpu_ecc_uncorrected_new", now.name,
                              n(*row.ecc_uncorrected_new) + " new uncorrectable ECC error(s) (" +
                                  row.ecc_counter + " counter) since the baseline",
                              "drain the node and reset the GPU so the rows are remapped; " +
                                  ecc_cmd + "; a GPU that keeps gaining them is an RMA"));
    if (row.ecc_corrected_new.value_or(0) > 0)
      findings.push_back(warn("baseline.gpu_ecc_corrected_new", now.name,
                              n(*row.ecc_corrected_new) + " new correctable ECC error(s) (" +
                                  corr_counter + " counter) since the baseline",
                              ecc_cmd + ": corrected errors cost nothing now, but a GPU whose "
                                        "count climbs run after run is failing memory: watch it"));
    if (row.remapped_rows_new.value_or(0) > 0)
      findings.push_back(warn("baseline.gpu_remap_new", now.name,
                              n(*row.remapped_rows_new) + " row(s) remapped since the baseline",
                              ecc_cmd + "; `fabcheck node` fails the GPU when a remap is pending "
                                        "or failed (reset or RMA)"));
    if (row.nvlink_errors_new.value_or(0) > 0)
      findings.push_back(warn("baseline.gpu_nvlink_errors_new", now.name,
                              n(*row.nvlink_errors_new) +
                                  " new NVLink error(s) (replay, recovery, CRC) since the baseline",
                              "`nvidia-smi nvlink -e`: a link whose counters keep rising is a "
                              "bad NVLink connection; reset the GPU, then service the "
                              "baseboard or bridge"));
    rows.push_back(row);
  }
  return rows;
}

}  // namespace fabkit::reports::baseline
