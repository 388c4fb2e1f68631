#include "fabric/gpu_active/bench_protocol.h"

#include <cmath>

#include "common/json.h"
#include "common/json_read.h"
#include "probes/gpu_active/gpu_active_facts.h"

namespace fabkit::fabric {
namespace {

BenchLine invalid(const std::string& why) {
  BenchLine l;
  l.text = why;
  return l;
}

// Field readers for one line's JSON: a missing or mistyped field names itself.
struct Fields {
  const Json& j;
  std::string head;
  std::string* error;

  bool fail(const std::string& why) const {
    if (error->empty()) *error = head + ": " + why;
    return false;
  }
  bool integer(const char* key, int* out, bool required = true) const {
    if (!j.contains(key) || j[key].is_null())
      return required ? fail(std::string("no \"") + key + "\"") : true;
    if (!j[key].is_number_integer())
      return fail(std::string("\"") + key + "\" is not an integer: " + j[key].dump());
    *out = j[key].get<int>();
    return true;
  }
  bool string(const Json& obj, const char* key, std::string* out, const std::string& where) const {
    if (!obj.contains(key) || !obj[key].is_string())
      return fail(where + "\"" + key + "\" is not a string");
    *out = obj[key].get<std::string>();
    return true;
  }
};

std::optional<int> opt_int(const Json& j, const char* key) {
  if (j.contains(key) && j[key].is_number_integer()) return j[key].get<int>();
  return std::nullopt;
}

BenchLine parse_hello(const Json& j) {
  BenchLine l;
  std::string err;
  Fields f{j, "HELLO", &err};
  if (!f.integer("protocol", &l.protocol)) return invalid(err);
  if (l.protocol != kBenchProtocolVersion)
    return invalid("HELLO: protocol " + std::to_string(l.protocol) + ", this fabcheck speaks " +
                   std::to_string(kBenchProtocolVersion) +
                   " (fabcheck-gpu-bench from another build)");
  if (!j.contains("devices") || !j["devices"].is_array())
    return invalid("HELLO: \"devices\" is not an array");
  if (j["devices"].empty())
    return invalid("HELLO: \"devices\" is empty (a child with no GPU says UNAVAILABLE)");
  for (size_t i = 0; i < j["devices"].size(); ++i) {
    const Json& d = j["devices"][i];
    std::string where = "devices[" + std::to_string(i) + "].";
    if (!d.is_object())
      return invalid("HELLO: devices[" + std::to_string(i) + "] is not an object");
    BenchDevice dev;
    Fields df{d, "HELLO", &err};
    if (!df.integer("index", &dev.index) || !df.string(d, "name", &dev.name, where) ||
        !df.string(d, "bus_id", &dev.bus_id, where))
      return invalid(err);
    if (dev.index != static_cast<int>(i))
      return invalid("HELLO: " + where + "index is " + std::to_string(dev.index) + ", expected " +
                     std::to_string(i));
    if (d.contains("memory_bytes") && d["memory_bytes"].is_number_unsigned())
      dev.memory_bytes = d["memory_bytes"].get<uint64_t>();
    l.devices.push_back(dev);
  }
  l.cuda_runtime = opt_int(j, "cuda_runtime");
  l.cuda_driver = opt_int(j, "cuda_driver");
  l.cublas = opt_int(j, "cublas");
  l.kind = BenchLineKind::kHello;
  return l;
}

BenchLine parse_step_or_figure(const std::string& head, const Json& j) {
  BenchLine l;
  std::string err;
  Fields f{j, head, &err};
  if (!f.integer("gpu", &l.gpu) || !f.string(j, "step", &l.step, "")) return invalid(err);
  if (!is_bench_step(l.step)) return invalid(head + ": unknown step \"" + l.step + "\"");
  if (l.gpu < -1)
    return invalid(head + ": gpu " + std::to_string(l.gpu) + " is not a device index");
  if (head == "STEP") {
    l.kind = BenchLineKind::kStep;
    return l;
  }
  if (l.gpu < 0)
    return invalid("FIGURE: a figure belongs to one GPU, got gpu " + std::to_string(l.gpu));
  if (j.contains("error")) {
    if (!f.string(j, "error", &l.error, "")) return invalid(err);
    if (j.contains("error_kind") && j["error_kind"].is_string())
      l.error_kind = j["error_kind"].get<std::string>();
    l.kind = BenchLineKind::kFigure;
    return l;
  }
  if (!j.contains("value") || !j["value"].is_number())
    return invalid("FIGURE: no numeric \"value\" and no \"error\"");
  double v = j["value"].get<double>();
  if (!std::isfinite(v) || v < 0)
    return invalid("FIGURE: \"value\" " + j["value"].dump() + " is not a finite figure >= 0");
  l.value = v;
  if (!f.integer("iters", &l.iters)) return invalid(err);
  if (j.contains("elapsed_ms") && j["elapsed_ms"].is_number())
    l.elapsed_ms = j["elapsed_ms"].get<double>();
  if (j.contains("link") && j["link"].is_object()) {
    const Json& link = j["link"];
    if (link.contains("speed") && link["speed"].is_string())
      l.link_speed = link["speed"].get<std::string>();
    if (link.contains("width") && link["width"].is_string())
      l.link_width = link["width"].get<std::string>();
  }
  l.kind = BenchLineKind::kFigure;
  return l;
}

}  // namespace

bool is_bench_step(const std::string& s) {
  using namespace probes;
  return s == kFigureGemm || s == kFigureDeviceCopy || s == kFigureH2d || s == kFigureD2h ||
         s == kFigureH2dConcurrent || s == kFigureD2hConcurrent;
}

BenchLine parse_bench_line(const std::string& raw) {
  std::string line = raw;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  size_t sp = line.find(' ');
  std::string head = line.substr(0, sp);
  std::string rest = sp == std::string::npos ? "" : line.substr(sp + 1);
  if (head == "DONE") {
    if (!rest.empty()) return invalid("DONE takes no argument");
    BenchLine l;
    l.kind = BenchLineKind::kDone;
    return l;
  }
  if (head == "UNAVAILABLE") {
    BenchLine l;
    l.kind = BenchLineKind::kUnavailable;
    l.text = rest.empty() ? "no reason given" : rest;
    return l;
  }
  if (head == "FAILED") {
    if (rest.empty()) return invalid("FAILED needs a kind");
    size_t sp2 = rest.find(' ');
    BenchLine l;
    l.kind = BenchLineKind::kFailed;
    l.word = rest.substr(0, sp2);
    l.text = sp2 == std::string::npos ? "" : rest.substr(sp2 + 1);
    return l;
  }
  if (head == "HELLO" || head == "STEP" || head == "FIGURE") {
    Json j;
    try {
      j = parse_json(rest, head + " line");
    } catch (const JsonReadError& e) {
      return invalid(e.too_deep()
                         ? e.what()
                         : head + " needs a JSON object, got '" + rest.substr(0, 60) + "'");
    }
    if (!j.is_object())
      return invalid(head + " needs a JSON object, got '" + rest.substr(0, 60) + "'");
    return head == "HELLO" ? parse_hello(j) : parse_step_or_figure(head, j);
  }
  // Only printable ASCII of the line goes into the message: it may be any bytes.
  std::string shown;
  for (char c : line.substr(0, 40)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
  return invalid("unknown line '" + shown + "'");
}

}  // namespace fabkit::fabric
