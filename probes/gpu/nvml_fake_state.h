// The fake NVML's state, parsed from a fixture (nvml_fake_parse.cc) and served by the fake entry
// points (nvml_fake.cc). Internal to probes/gpu; nvml_fake.h documents the fixture.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/json.h"
#include "probes/gpu/nvml_fake.h"

namespace fabkit::probes::nvml::fake_detail {

struct FakeLink {
  bool active = false;
  std::array<std::optional<uint64_t>, 4> counters;  // by nvmlNvLinkErrorCounter_t 0..3
};

struct FakeFabric {
  unsigned char state = 0;
  Return status = kSuccess;
  unsigned clique_id = 0;
  unsigned char uuid[kFabricUuidLen] = {};
  unsigned health_mask = 0;
  unsigned char health_summary = 0;
  int max_version = 3;
};

struct FakeProcess {
  unsigned pid = 0;
  std::optional<uint64_t> used_memory;
};

struct FakeDevice {
  std::string name, uuid, bus_id;
  std::optional<unsigned> numa_node;
  unsigned long long memory_total = 0;
  int cc_major = 0, cc_minor = 0;
  std::map<std::string, Return> errors;  // NVML call name ("*": every health call) -> code
  std::optional<std::string> vbios, inforom, serial, part_number;
  std::optional<std::pair<bool, bool>> ecc_mode;       // current, pending
  std::map<std::pair<int, int>, uint64_t> ecc_counts;  // (error type, counter type) -> count
  // (error type, counter type, nvmlMemoryLocation_t) -> count
  std::map<std::array<int, 3>, uint64_t> ecc_location_counts;
  std::optional<bool> retired_pending;
  std::map<int, unsigned> retired_pages;            // cause -> count
  std::optional<std::array<unsigned, 4>> remapped;  // corrected, uncorrected, pending, failure
  std::optional<uint64_t> clocks;
  std::optional<int> temperature;
  std::map<int, unsigned> thresholds;  // NVML_TEMPERATURE_THRESHOLD_* -> degrees C
  std::optional<bool> persistence;
  std::optional<unsigned> pcie_cur_gen, pcie_cur_width, pcie_max_gen, pcie_max_width;
  std::optional<std::vector<std::optional<FakeLink>>> nvlinks;
  std::optional<FakeFabric> fabric;
  std::optional<std::vector<FakeProcess>> processes;
  std::optional<std::pair<bool, bool>> mig;  // current, pending
  std::optional<int> compute_mode;
};

struct FakeState {
  Return init = kSuccess;
  std::string driver_version;
  int cuda_driver_version = 0;
  Return count_error = kSuccess;
  bool numa_entry_point = true;
  std::set<std::string> missing;  // optional entry points left null
  std::vector<FakeDevice> devices;
  FakeCalls calls;
};

// Throws std::invalid_argument naming the field.
void parse_fixture(const Json& fixture, FakeState& state);
// The optional entry points a fixture may name in "missing_entry_points".
const std::set<std::string>& optional_entry_points();

}  // namespace fabkit::probes::nvml::fake_detail
