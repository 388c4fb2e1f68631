// Any bytes as a kernel log capture, a --since value, an AER file or a pci.ids: parsed, scanned,
// judged and written as JSON without a crash; --since refuses with UsageError only.
#include <cstdint>
#include <string>

#include "common/errors.h"
#include "probes/kernel_log/kernel_log_facts.h"
#include "probes/pcie/pci_ids.h"
#include "probes/pcie/pcie_facts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabkit::probes;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string format;
  KernelLogFacts f;
  f.readable = true;
  f.since_boot_s = 10;
  // One GPU on the bus, so a line about any other is kernel_log.not_a_gpu.
  f.gpu_bus_ids = std::vector<std::string>{"0000:18:00.0"};
  auto records = parse_kernel_log_text(text, &format);
  place_wall_times(records, 1700000000);  // ISO times become times since this boot
  scan_kernel_log(records, {{"0000:18:00.0", "GPU 0000:18:00.0"}}, f);
  judge_kernel_log(f);
  to_json(f).dump();
  parse_kmsg_record(text);
  try {
    parse_since(text);
  } catch (const fabkit::UsageError&) {
  }
  // What reaches the report must be UTF-8 (the JSON writer throws on anything else).
  if (auto aer = parse_aer_counters(text))
    for (const auto& [name, n] : aer->by_name) fabkit::Json{{name, n}}.dump();
  auto ids = PciIdNames::from_text(text, "fuzz");
  fabkit::Json(ids.name("0x10de", "0x2330")).dump();
  fabkit::Json(ids.name(text.substr(0, 6), text.size() > 6 ? text.substr(6, 6) : "")).dump();
  return 0;
}
