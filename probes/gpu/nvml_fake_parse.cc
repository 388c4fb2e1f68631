// The fake NVML's fixture reader (nvml_fake.h documents the format). Strict: unknown members and
// wrong types are refused with the field's path, so a fixture cannot silently mean "not supported".
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "probes/gpu/nvml_fake_state.h"

namespace fabkit::probes::nvml::fake_detail {
namespace {

constexpr int kMaxTemperatureC = 1000;

[[noreturn]] void bad(const std::string& where, const std::string& why) {
  throw std::invalid_argument("NVML fixture: " + where + ": " + why);
}

void only_keys(const Json& j, const std::string& where, std::initializer_list<const char*> keys) {
  if (!j.is_object()) bad(where, "is not an object");
  for (const auto& [k, _] : j.items()) {
    bool known = false;
    for (const char* key : keys) known = known || k == key;
    if (!known) bad(where + "." + k, "is not a member this fixture format knows (nvml_fake.h)");
  }
}

template <typename T>
std::optional<T> opt(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return std::nullopt;
  try {
    return j[key].get<T>();
  } catch (const Json::exception& e) {
    bad(where + "." + key, e.what());
  }
}

// A whole number from lo to hi. nlohmann's get<int> truncates 80.5 to 80 and turns 1e30 into
// INT_MIN (the conversion is undefined), and get<unsigned> wraps -1 to 4294967295: a replayed
// value must be what NVML could have answered, so every number is checked here.
template <typename T>
std::optional<T> whole(const Json& j, const char* key, const std::string& where,
                       T lo = std::numeric_limits<T>::min(), T hi = std::numeric_limits<T>::max()) {
  static_assert(std::is_integral_v<T>);
  if (!j.contains(key)) return std::nullopt;
  const Json& v = j[key];
  bool in = false;
  T got{};
  if (v.is_number_integer()) {
    // nlohmann holds a parsed number that is not negative unsigned, a negative one signed.
    if (!v.is_number_unsigned() && v.get<int64_t>() < 0) {
      if constexpr (std::is_signed_v<T>) {
        const int64_t x = v.get<int64_t>();
        in = x >= lo && x <= hi;
        got = static_cast<T>(x);
      }
    } else {
      const uint64_t u = v.get<uint64_t>();
      if constexpr (std::is_signed_v<T>)
        in = hi >= 0 && u <= static_cast<uint64_t>(hi) &&
             (lo <= 0 || u >= static_cast<uint64_t>(lo));
      else
        in = u >= lo && u <= hi;
      got = static_cast<T>(u);
    }
  }
  if (!in) {
    std::string seen = v.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (seen.size() > 40) seen = seen.substr(0, 40) + "…";
    bad(where + "." + key, "must be a whole number from " + std::to_string(lo) + " to " +
                               std::to_string(hi) + ", not " + seen);
  }
  return got;
}

bool flag(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_boolean()) bad(where + "." + key, "must be true or false");
  return j[key].get<bool>();
}

// A non-negative integer (parsed JSON holds it unsigned, a literal built in C++ signed).
bool is_count(const Json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

unsigned count(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !is_count(j[key]) || j[key].get<uint64_t>() > 0xffffffffull)
    bad(where + "." + key, "must be a count");
  return j[key].get<unsigned>();
}

std::optional<uint64_t> counter(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!is_count(j[key])) bad(where + "." + key, "must be a count or null");
  return j[key].get<uint64_t>();
}

void parse_uuid(const std::string& text, unsigned char (&out)[kFabricUuidLen],
                const std::string& where) {
  unsigned v[kFabricUuidLen];
  int used = 0;
  if (text.size() != 36 ||
      std::sscanf(text.c_str(), "%2x%2x%2x%2x-%2x%2x-%2x%2x-%2x%2x-%2x%2x%2x%2x%2x%2x%n", &v[0],
                  &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11],
                  &v[12], &v[13], &v[14], &v[15], &used) != 16 ||
      used != 36)
    bad(where, "'" + text + "' is not a UUID (8-4-4-4-12 hex digits)");
  for (unsigned i = 0; i < kFabricUuidLen; ++i) out[i] = static_cast<unsigned char>(v[i]);
}

void parse_ecc(const Json& j, const std::string& w, FakeDevice& d) {
  if (j.contains("ecc_mode")) {
    only_keys(j["ecc_mode"], w + ".ecc_mode", {"current", "pending"});
    d.ecc_mode = {flag(j["ecc_mode"], "current", w + ".ecc_mode"),
                  flag(j["ecc_mode"], "pending", w + ".ecc_mode")};
  }
  if (j.contains("ecc_errors")) {
    only_keys(j["ecc_errors"], w + ".ecc_errors", {"volatile", "aggregate"});
    for (auto [name, counter_type] :
         {std::pair{"volatile", kVolatileEcc}, std::pair{"aggregate", kAggregateEcc}}) {
      if (!j["ecc_errors"].contains(name)) continue;
      std::string cw = w + ".ecc_errors." + name;
      const Json& c = j["ecc_errors"][name];
      only_keys(c, cw, {"corrected", "uncorrected"});
      for (auto [type_name, type] : {std::pair{"corrected", kMemoryErrorCorrected},
                                     std::pair{"uncorrected", kMemoryErrorUncorrected}})
        if (auto n = counter(c, type_name, cw)) d.ecc_counts[{type, counter_type}] = *n;
    }
  }
  // {"sram": {"volatile": {"corrected": n, "uncorrected": n}, "aggregate": {...}}, "dram": {...}}
  if (j.contains("ecc_location_errors")) {
    const Json& l = j["ecc_location_errors"];
    only_keys(l, w + ".ecc_location_errors", {"sram", "dram"});
    for (auto [loc_name, location] :
         {std::pair{"sram", kMemoryLocationSram}, std::pair{"dram", kMemoryLocationDram}}) {
      if (!l.contains(loc_name)) continue;
      std::string lw = w + ".ecc_location_errors." + loc_name;
      only_keys(l[loc_name], lw, {"volatile", "aggregate"});
      for (auto [name, counter_type] :
           {std::pair{"volatile", kVolatileEcc}, std::pair{"aggregate", kAggregateEcc}}) {
        if (!l[loc_name].contains(name)) continue;
        std::string cw = lw + "." + name;
        const Json& c = l[loc_name][name];
        only_keys(c, cw, {"corrected", "uncorrected"});
        for (auto [type_name, type] : {std::pair{"corrected", kMemoryErrorCorrected},
                                       std::pair{"uncorrected", kMemoryErrorUncorrected}})
          if (auto n = counter(c, type_name, cw))
            d.ecc_location_counts[{type, counter_type, location}] = *n;
      }
    }
  }
  if (j.contains("retired_pages")) {
    const Json& r = j["retired_pages"];
    std::string rw = w + ".retired_pages";
    only_keys(r, rw, {"pending", "multiple_single_bit", "double_bit"});
    d.retired_pending = flag(r, "pending", rw);
    if (r.contains("multiple_single_bit"))
      d.retired_pages[kRetirementMultipleSingleBit] = count(r, "multiple_single_bit", rw);
    if (r.contains("double_bit"))
      d.retired_pages[kRetirementDoubleBit] = count(r, "double_bit", rw);
  }
  if (j.contains("remapped_rows")) {
    const Json& r = j["remapped_rows"];
    std::string rw = w + ".remapped_rows";
    only_keys(r, rw, {"corrected", "uncorrected", "pending", "failure"});
    d.remapped =
        std::array<unsigned, 4>{count(r, "corrected", rw), count(r, "uncorrected", rw),
                                flag(r, "pending", rw) ? 1u : 0u, flag(r, "failure", rw) ? 1u : 0u};
  }
}

void parse_thermal_and_pcie(const Json& j, const std::string& w, FakeDevice& d) {
  d.clocks = whole<uint64_t>(j, "clocks_event_reasons", w);
  // NVML answers whole degrees C, unsigned; no sensor reads past 1000.
  d.temperature = whole<int>(j, "temperature_c", w, 0, kMaxTemperatureC);
  if (j.contains("temperature_thresholds_c")) {
    const Json& t = j["temperature_thresholds_c"];
    std::string tw = w + ".temperature_thresholds_c";
    only_keys(t, tw, {"slowdown", "shutdown"});
    if (t.contains("slowdown"))
      d.thresholds[kTemperatureThresholdSlowdown] = count(t, "slowdown", tw);
    if (t.contains("shutdown"))
      d.thresholds[kTemperatureThresholdShutdown] = count(t, "shutdown", tw);
  }
  d.persistence = opt<bool>(j, "persistence_mode", w);
  if (j.contains("pcie")) {
    const Json& p = j["pcie"];
    std::string pw = w + ".pcie";
    only_keys(p, pw, {"current_generation", "current_width", "max_generation", "max_width"});
    d.pcie_cur_gen = whole<unsigned>(p, "current_generation", pw);
    d.pcie_cur_width = whole<unsigned>(p, "current_width", pw);
    d.pcie_max_gen = whole<unsigned>(p, "max_generation", pw);
    d.pcie_max_width = whole<unsigned>(p, "max_width", pw);
  }
}

void parse_links(const Json& j, const std::string& w, FakeDevice& d) {
  if (j.contains("nvlinks")) {
    if (!j["nvlinks"].is_array()) bad(w + ".nvlinks", "is not an array");
    std::vector<std::optional<FakeLink>> links;
    for (size_t i = 0; i < j["nvlinks"].size(); ++i) {
      const Json& l = j["nvlinks"][i];
      std::string lw = w + ".nvlinks[" + std::to_string(i) + "]";
      if (l.is_null()) {
        links.push_back(std::nullopt);
        continue;
      }
      only_keys(l, lw, {"active", "replay", "recovery", "crc_flit", "crc_data"});
      FakeLink fl;
      fl.active = flag(l, "active", lw);
      fl.counters = {counter(l, "replay", lw), counter(l, "recovery", lw),
                     counter(l, "crc_flit", lw), counter(l, "crc_data", lw)};
      links.push_back(fl);
    }
    d.nvlinks = std::move(links);
  }
  if (j.contains("fabric")) {
    const Json& f = j["fabric"];
    std::string fw = w + ".fabric";
    only_keys(f, fw,
              {"state", "status", "clique_id", "cluster_uuid", "health_mask", "health_summary",
               "max_version"});
    FakeFabric fab;
    fab.state = static_cast<unsigned char>(count(f, "state", fw));
    fab.status = whole<int>(f, "status", fw).value_or(kSuccess);
    fab.clique_id = whole<unsigned>(f, "clique_id", fw).value_or(0);
    if (f.contains("cluster_uuid"))
      parse_uuid(opt<std::string>(f, "cluster_uuid", fw).value_or(""), fab.uuid,
                 fw + ".cluster_uuid");
    fab.health_mask = whole<unsigned>(f, "health_mask", fw).value_or(0);
    fab.health_summary = whole<unsigned char>(f, "health_summary", fw).value_or(0);
    fab.max_version = whole<int>(f, "max_version", fw, 1, 3).value_or(3);
    d.fabric = fab;
  }
}

void parse_modes(const Json& j, const std::string& w, FakeDevice& d) {
  if (j.contains("processes")) {
    if (!j["processes"].is_array()) bad(w + ".processes", "is not an array");
    std::vector<FakeProcess> ps;
    for (size_t i = 0; i < j["processes"].size(); ++i) {
      const Json& p = j["processes"][i];
      std::string pw = w + ".processes[" + std::to_string(i) + "]";
      only_keys(p, pw, {"pid", "used_memory"});
      ps.push_back({count(p, "pid", pw), counter(p, "used_memory", pw)});
    }
    d.processes = std::move(ps);
  }
  if (j.contains("mig_mode")) {
    only_keys(j["mig_mode"], w + ".mig_mode", {"current", "pending"});
    d.mig = {flag(j["mig_mode"], "current", w + ".mig_mode"),
             flag(j["mig_mode"], "pending", w + ".mig_mode")};
  }
  d.compute_mode = whole<int>(j, "compute_mode", w);
}

FakeDevice parse_device(const Json& j, size_t i) {
  std::string where = "devices[" + std::to_string(i) + "]";
  only_keys(j, where,
            {"name",
             "uuid",
             "bus_id",
             "numa_node",
             "memory_total",
             "compute_capability",
             "errors",
             "vbios_version",
             "inforom_image_version",
             "serial",
             "board_part_number",
             "ecc_mode",
             "ecc_errors",
             "ecc_location_errors",
             "retired_pages",
             "remapped_rows",
             "clocks_event_reasons",
             "temperature_c",
             "temperature_thresholds_c",
             "persistence_mode",
             "pcie",
             "nvlinks",
             "fabric",
             "processes",
             "mig_mode",
             "compute_mode"});
  FakeDevice d;
  try {
    d.name = j.at("name").get<std::string>();
    d.uuid = j.at("uuid").get<std::string>();
    d.bus_id = j.at("bus_id").get<std::string>();
    if (j.contains("numa_node") && !j["numa_node"].is_null())
      d.numa_node = whole<unsigned>(j, "numa_node", where);
    d.memory_total = whole<unsigned long long>(j, "memory_total", where).value_or(0);
    std::string cc = j.value("compute_capability", std::string("0.0"));
    if (std::sscanf(cc.c_str(), "%d.%d", &d.cc_major, &d.cc_minor) != 2)
      bad(where + ".compute_capability", "'" + cc + "' is not MAJOR.MINOR");
    if (j.contains("errors")) {
      if (!j["errors"].is_object()) bad(where + ".errors", "is not an object");
      for (const auto& [call, code] : j["errors"].items())
        d.errors[call] = *whole<int>(j["errors"], call.c_str(), where + ".errors");
    }
  } catch (const Json::exception& e) {
    bad(where, e.what());
  }
  d.vbios = opt<std::string>(j, "vbios_version", where);
  d.inforom = opt<std::string>(j, "inforom_image_version", where);
  d.serial = opt<std::string>(j, "serial", where);
  d.part_number = opt<std::string>(j, "board_part_number", where);
  parse_ecc(j, where, d);
  parse_thermal_and_pcie(j, where, d);
  parse_links(j, where, d);
  parse_modes(j, where, d);
  return d;
}

}  // namespace

const std::set<std::string>& optional_entry_points() {
  static const std::set<std::string> names = {
      "nvmlDeviceGetNumaNodeId",
      "nvmlDeviceGetEccMode",
      "nvmlDeviceGetTotalEccErrors",
      "nvmlDeviceGetMemoryErrorCounter",
      "nvmlDeviceGetRetiredPages",
      "nvmlDeviceGetRetiredPagesPendingStatus",
      "nvmlDeviceGetRemappedRows",
      "nvmlDeviceGetCurrentClocksEventReasons",
      "nvmlDeviceGetCurrentClocksThrottleReasons",
      "nvmlDeviceGetTemperatureV",
      "nvmlDeviceGetTemperature",
      "nvmlDeviceGetTemperatureThreshold",
      "nvmlDeviceGetPersistenceMode",
      "nvmlDeviceGetCurrPcieLinkGeneration",
      "nvmlDeviceGetCurrPcieLinkWidth",
      "nvmlDeviceGetMaxPcieLinkGeneration",
      "nvmlDeviceGetMaxPcieLinkWidth",
      "nvmlDeviceGetNvLinkState",
      "nvmlDeviceGetNvLinkErrorCounter",
      "nvmlDeviceGetGpuFabricInfoV",
      "nvmlDeviceGetGpuFabricInfo",
      "nvmlDeviceGetComputeRunningProcesses_v3",
      "nvmlDeviceGetComputeRunningProcesses_v2",
      "nvmlDeviceGetMigMode",
      "nvmlDeviceGetComputeMode",
      "nvmlDeviceGetVbiosVersion",
      "nvmlDeviceGetInforomImageVersion",
      "nvmlDeviceGetSerial",
      "nvmlDeviceGetBoardPartNumber",
  };
  return names;
}

void parse_fixture(const Json& fixture, FakeState& state) {
  only_keys(fixture, "top level",
            {"init", "driver_version", "cuda_driver_version", "count_error", "numa_entry_point",
             "missing_entry_points", "devices"});
  try {
    state.init = whole<int>(fixture, "init", "top level").value_or(kSuccess);
    state.driver_version = fixture.value("driver_version", std::string());
    state.cuda_driver_version =
        whole<int>(fixture, "cuda_driver_version", "top level", 0).value_or(0);
    state.count_error = whole<int>(fixture, "count_error", "top level").value_or(kSuccess);
    state.numa_entry_point = fixture.value("numa_entry_point", true);
  } catch (const Json::exception& e) {
    bad("top level", e.what());
  }
  if (fixture.contains("missing_entry_points")) {
    const Json& m = fixture["missing_entry_points"];
    if (!m.is_array()) bad("missing_entry_points", "is not an array");
    for (size_t i = 0; i < m.size(); ++i) {
      std::string w = "missing_entry_points[" + std::to_string(i) + "]";
      if (!m[i].is_string()) bad(w, "is not a string");
      std::string name = m[i].get<std::string>();
      if (!optional_entry_points().count(name))
        bad(w, "'" + name + "' is not an optional NVML entry point the probe uses");
      state.missing.insert(name);
    }
  }
  if (!state.numa_entry_point) state.missing.insert("nvmlDeviceGetNumaNodeId");
  if (fixture.contains("devices")) {
    if (!fixture["devices"].is_array()) bad("devices", "is not an array");
    for (size_t i = 0; i < fixture["devices"].size(); ++i)
      state.devices.push_back(parse_device(fixture["devices"][i], i));
  }
}

}  // namespace fabkit::probes::nvml::fake_detail
