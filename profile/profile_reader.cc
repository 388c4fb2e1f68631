#include "profile/profile_reader.h"

#include <regex>
#include <set>

#include "common/errors.h"
#include "common/input_file.h"
#include "common/json.h"
#include "common/json_read.h"
#include "profile/content_hash.h"
#include "profile/value_rules.h"

namespace fabkit::profile {
namespace {

constexpr size_t kMaxProfileBytes = 16u << 20;  // a 10k-node profile is a few MiB

// Walks the document with the current field path, so every error says where it is.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& path, const Json& value, const std::string& what,
                         const std::string& fix = "") const {
    std::string msg = source_ + ": field '" + path + "': value " + show_json_value(value) + " " + what;
    if (!fix.empty()) msg += "; " + fix;
    throw UsageError(msg);
  }
  [[noreturn]] void missing(const std::string& path) const {
    throw UsageError(source_ + ": field '" + path + "' is missing; regenerate the profile with "
                     "`fabcheck profile` or add it (docs/profile.md)");
  }

  // Refuses members not in `allowed`: a misspelt key would otherwise be silently ignored.
  void only_keys(const Json& obj, const std::string& path, std::set<std::string> allowed) const {
    for (auto it = obj.begin(); it != obj.end(); ++it)
      if (!allowed.count(it.key()))
        fail(path.empty() ? it.key() : path + "." + it.key(), it.value(),
             "is under an unknown key '" + it.key() + "'",
             "remove it (this fabcheck reads schema_version " +
                 std::to_string(kProfileSchemaVersion) + ")");
  }
  const Json& member(const Json& obj, const std::string& path, const char* key) const {
    if (!obj.contains(key)) missing(join(path, key));
    return obj.at(key);
  }
  const Json& object(const Json& obj, const std::string& path, const char* key) const {
    const Json& v = member(obj, path, key);
    if (!v.is_object()) fail(join(path, key), v, "is not an object");
    return v;
  }
  const Json& array(const Json& obj, const std::string& path, const char* key) const {
    const Json& v = member(obj, path, key);
    if (!v.is_array()) fail(join(path, key), v, "is not an array");
    return v;
  }
  std::string text(const Json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, v, "is not a string");
    const auto& s = v.get_ref<const std::string&>();
    for (char c : s)
      if (static_cast<unsigned char>(c) < 0x20)
        fail(path, v, "contains a control character (newline, tab...)");
    return s;
  }
  std::string string(const Json& obj, const std::string& path, const char* key) const {
    return text(member(obj, path, key), join(path, key));
  }
  std::optional<std::string> opt_string(const Json& obj, const std::string& path,
                                        const char* key) const {
    const Json& v = member(obj, path, key);
    if (v.is_null()) return std::nullopt;
    return text(v, join(path, key));
  }
  bool boolean(const Json& obj, const std::string& path, const char* key) const {
    const Json& v = member(obj, path, key);
    if (!v.is_boolean()) fail(join(path, key), v, "is not true/false");
    return v.get<bool>();
  }
  long integer(const Json& v, const std::string& path, long lo, long hi) const {
    if (!v.is_number_integer()) fail(path, v, "is not an integer");
    long n = v.is_number_unsigned() ? static_cast<long>(std::min<uint64_t>(v.get<uint64_t>(), 1ull << 62))
                                    : v.get<long>();
    if (n < lo || n > hi)
      fail(path, v, "is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
    return n;
  }
  std::vector<std::string> strings(const Json& obj, const std::string& path, const char* key) const {
    const Json& a = array(obj, path, key);
    std::vector<std::string> out;
    for (size_t i = 0; i < a.size(); ++i) out.push_back(text(a[i], idx(join(path, key), i)));
    return out;
  }
  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string idx(const std::string& path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

 private:
  std::string source_;
};

void check_rule(const Reader& r, const std::string& path, const std::string& value, RuleError e) {
  if (e) r.fail(path, Json(value), *e);
}

// Length first: libstdc++'s regex recurses per input character, so an unbounded string could
// exhaust the stack on a hostile file.
bool bounded_match(const std::string& v, const std::regex& re, size_t max_len) {
  return v.size() <= max_len && std::regex_match(v, re);
}

void check_timestamp(const Reader& r, const std::string& path, const std::string& v) {
  static const std::regex kRfc3339(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d))");
  if (!bounded_match(v, kRfc3339, 40)) r.fail(path, Json(v), "is not an RFC 3339 time");
}

Setting read_setting(const Reader& r, const Json& j, const std::string& path,
                     const std::string& var) {
  if (!j.is_object()) r.fail(path, j, "is not an object");
  r.only_keys(j, path, {"value", "basis", "reason", "evidence"});
  Setting s;
  s.value = r.opt_string(j, path, "value");
  if (s.value) check_rule(r, path + ".value", *s.value, check_variable_value(var, *s.value));
  std::string basis = r.string(j, path, "basis");
  auto b = basis_from_string(basis);
  if (!b) r.fail(path + ".basis", Json(basis), "is not one of measured, inferred, unmeasured");
  s.basis = *b;
  s.reason = r.string(j, path, "reason");
  s.evidence = r.strings(j, path, "evidence");
  return s;
}

std::map<std::string, Setting> read_settings(const Reader& r, const Json& j,
                                             const std::string& path) {
  std::map<std::string, Setting> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string p = Reader::join(path, it.key());
    if (!is_known_variable(it.key()))
      r.fail(p, it.value(), "is under an unknown variable '" + it.key() + "'",
             "a profile sets only the variables listed in docs/profile.md");
    out[it.key()] = read_setting(r, it.value(), p, it.key());
  }
  return out;
}

NodeEntry read_node(const Reader& r, const Json& j, const std::string& path) {
  if (!j.is_object()) r.fail(path, j, "is not an object");
  r.only_keys(j, path,
              {"hostname", "interface", "hcas", "gpu_count", "locality", "topo_file", "efa_devices",
               "instance_type", "libfabric_version", "net_plugin_version"});
  NodeEntry n;
  n.hostname = r.string(j, path, "hostname");
  check_rule(r, path + ".hostname", n.hostname, check_hostname(n.hostname));
  n.interface = r.opt_string(j, path, "interface");
  if (n.interface)
    check_rule(r, path + ".interface", *n.interface, check_interface_name(*n.interface));
  const Json& hcas = r.array(j, path, "hcas");
  for (size_t i = 0; i < hcas.size(); ++i) {
    std::string p = Reader::idx(path + ".hcas", i);
    const Json& h = hcas[i];
    if (!h.is_object()) r.fail(p, h, "is not an object");
    r.only_keys(h, p, {"device", "port", "link_layer", "rate_gbps", "roce_v2_gid_index"});
    HcaPort port;
    port.device = r.string(h, p, "device");
    check_rule(r, p + ".device", port.device, check_variable_value("NCCL_IB_HCA", port.device));
    port.port = static_cast<int>(r.integer(r.member(h, p, "port"), p + ".port", 1, 255));
    port.link_layer = r.string(h, p, "link_layer");
    if (port.link_layer != "InfiniBand" && port.link_layer != "Ethernet")
      r.fail(p + ".link_layer", Json(port.link_layer), "is not InfiniBand or Ethernet");
    const Json& rate = r.member(h, p, "rate_gbps");
    if (!rate.is_null()) {
      if (!rate.is_number() || rate.get<double>() < 0 || rate.get<double>() > 1e6)
        r.fail(p + ".rate_gbps", rate, "is not a rate in Gb/s (number 0..1e6 or null)");
      port.rate_gbps = rate.get<double>();
    }
    const Json& gid = r.member(h, p, "roce_v2_gid_index");
    if (!gid.is_null())
      port.roce_v2_gid_index = static_cast<int>(r.integer(gid, p + ".roce_v2_gid_index", 0, 255));
    n.hcas.push_back(port);
  }
  n.gpu_count = static_cast<int>(r.integer(r.member(j, path, "gpu_count"), path + ".gpu_count", 0, 4096));
  const Json& loc = r.array(j, path, "locality");
  for (size_t i = 0; i < loc.size(); ++i) {
    std::string p = Reader::idx(path + ".locality", i);
    if (!loc[i].is_object()) r.fail(p, loc[i], "is not an object");
    r.only_keys(loc[i], p, {"gpu_bus_id", "nearest_nic", "path_level"});
    GpuNic g;
    g.gpu_bus_id = r.string(loc[i], p, "gpu_bus_id");
    g.nearest_nic = r.opt_string(loc[i], p, "nearest_nic");
    g.path_level = r.opt_string(loc[i], p, "path_level");
    static const std::set<std::string> kLevels = {"LOC", "NVL", "PIX", "PXB", "PXN", "PHB", "SYS", "NET"};
    if (g.path_level && !kLevels.count(*g.path_level))
      r.fail(p + ".path_level", Json(*g.path_level), "is not an NCCL path level (PIX, PXB, PHB, SYS...)");
    n.locality.push_back(g);
  }
  n.topo_file = r.opt_string(j, path, "topo_file");
  if (n.topo_file)
    check_rule(r, path + ".topo_file", *n.topo_file, check_variable_value("NCCL_TOPO_FILE", *n.topo_file));
  if (j.contains("efa_devices"))
    n.efa_devices = static_cast<int>(r.integer(j["efa_devices"], path + ".efa_devices", 0, 1024));
  for (auto [key, slot] : {std::pair{"instance_type", &n.instance_type},
                           std::pair{"libfabric_version", &n.libfabric_version},
                           std::pair{"net_plugin_version", &n.net_plugin_version}}) {
    if (j.contains(key)) *slot = r.opt_string(j, path, key);  // optional keys (docs/efa.md)
    if (*slot) check_rule(r, path + "." + key, **slot, check_fabric_label(**slot));
  }
  return n;
}

void read_provenance(const Reader& r, const Json& doc, Profile& p) {
  const Json& j = r.object(doc, "", "provenance");
  r.only_keys(j, "provenance", {"created_at", "created_on", "fabcheck_version", "inputs", "content_hash"});
  p.provenance.created_at = r.string(j, "provenance", "created_at");
  check_timestamp(r, "provenance.created_at", p.provenance.created_at);
  p.provenance.created_on = r.string(j, "provenance", "created_on");
  p.provenance.fabcheck_version = r.string(j, "provenance", "fabcheck_version");
  const Json& inputs = r.array(j, "provenance", "inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string path = Reader::idx("provenance.inputs", i);
    if (!inputs[i].is_object()) r.fail(path, inputs[i], "is not an object");
    r.only_keys(inputs[i], path, {"kind", "hostname", "generated_at", "source"});
    InputRef in;
    in.kind = r.string(inputs[i], path, "kind");
    if (in.kind != "node" && in.kind != "pair" && in.kind != "live")
      r.fail(path + ".kind", Json(in.kind), "is not node, pair or live");
    in.hostname = r.string(inputs[i], path, "hostname");
    in.generated_at = r.string(inputs[i], path, "generated_at");
    in.source = r.string(inputs[i], path, "source");
    p.provenance.inputs.push_back(in);
  }
  p.provenance.content_hash = r.string(j, "provenance", "content_hash");
  static const std::regex kHash("sha256:[0-9a-f]{64}");
  if (!bounded_match(p.provenance.content_hash, kHash, 71))
    r.fail("provenance.content_hash", Json(p.provenance.content_hash), "is not sha256:<64 hex digits>");
}

void read_container(const Reader& r, const Json& doc, Profile& p) {
  const Json& j = r.object(doc, "", "container");
  r.only_keys(j, "container", {"network_host", "memlock_unlimited", "shm_size", "binds", "devices"});
  auto& c = p.container;
  c.network_host = r.boolean(j, "container", "network_host");
  c.memlock_unlimited = r.boolean(j, "container", "memlock_unlimited");
  c.shm_size = r.opt_string(j, "container", "shm_size");
  static const std::regex kSize("[1-9][0-9]{0,5}[bkmg]?");
  if (c.shm_size && !bounded_match(*c.shm_size, kSize, 8))
    r.fail("container.shm_size", Json(*c.shm_size), "is not a size like 8g (docker --shm-size)");
  c.binds = r.strings(j, "container", "binds");
  c.devices = r.strings(j, "container", "devices");
  for (const auto* list : {&c.binds, &c.devices})
    for (size_t i = 0; i < list->size(); ++i)
      check_rule(r, Reader::idx(list == &c.binds ? "container.binds" : "container.devices", i),
                 (*list)[i], check_variable_value("NCCL_TOPO_FILE", (*list)[i]));
}

}  // namespace

Profile parse_profile(const std::string& text, const std::string& source) {
  Reader r(source);
  Json doc;
  try {
    doc = parse_json(text, source);
  } catch (const JsonReadError& e) {
    throw UsageError(std::string(e.what()) + "; regenerate it with `fabcheck profile --out " +
                     source + "`");
  }
  if (!doc.is_object()) r.fail("(document)", doc, "is not a JSON object");
  // schema_version first: a newer document may use fields this reader does not know.
  const Json& v = r.member(doc, "", "schema_version");
  if (!v.is_number_integer()) r.fail("schema_version", v, "is not an integer");
  if (v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(kProfileSchemaVersion)
                             : v.get<int64_t>() > kProfileSchemaVersion)
    r.fail("schema_version", v, "is newer than this fabcheck reads (" +
           std::to_string(kProfileSchemaVersion) + ")", "upgrade fabcheck or regenerate the profile");
  if (v.get<int64_t>() < 1)
    r.fail("schema_version", v, "is not a known version (1.." + std::to_string(kProfileSchemaVersion) + ")");
  r.only_keys(doc, "", {"schema_version", "kind", "provenance", "nccl", "nodes", "settings",
                        "hosts", "container"});
  if (r.string(doc, "", "kind") != kProfileKind)
    r.fail("kind", doc["kind"], std::string("is not \"") + kProfileKind + "\"",
           "is this a node report? build a profile with `fabcheck profile --out cluster.json REPORT...`");
  Profile p;
  p.schema_version = static_cast<int>(v.get<int64_t>());
  read_provenance(r, doc, p);
  const Json& nccl = r.object(doc, "", "nccl");
  r.only_keys(nccl, "nccl", {"version", "version_source"});
  p.nccl.version = r.opt_string(nccl, "nccl", "version");
  static const std::regex kVer(R"(\d{1,4}\.\d{1,4}(\.\d{1,4}){0,2})");
  if (p.nccl.version && !bounded_match(*p.nccl.version, kVer, 32))
    r.fail("nccl.version", Json(*p.nccl.version), "is not a version like 2.18.3");
  p.nccl.version_source = r.string(nccl, "nccl", "version_source");
  const Json& nodes = r.array(doc, "", "nodes");
  std::set<std::string> seen;
  for (size_t i = 0; i < nodes.size(); ++i) {
    p.nodes.push_back(read_node(r, nodes[i], Reader::idx("nodes", i)));
    if (!seen.insert(p.nodes.back().hostname).second)
      r.fail(Reader::idx("nodes", i) + ".hostname", Json(p.nodes.back().hostname),
             "appears twice", "keep one entry per host");
  }
  p.settings = read_settings(r, r.object(doc, "", "settings"), "settings");
  const Json& hosts = r.object(doc, "", "hosts");
  for (auto it = hosts.begin(); it != hosts.end(); ++it) {
    std::string path = "hosts." + it.key();
    check_rule(r, path, it.key(), check_hostname(it.key()));
    if (!it.value().is_object()) r.fail(path, it.value(), "is not an object");
    p.hosts[it.key()] = read_settings(r, it.value(), path);
  }
  read_container(r, doc, p);
  p.computed_hash = content_hash(doc);
  return p;
}

Profile load_profile(const std::filesystem::path& path) {
  const std::string text = read_input(
      path.string(), {"", kMaxProfileBytes,
                      "give the cluster.json `fabcheck profile --out cluster.json` wrote"});
  return parse_profile(text, path.string());
}

}  // namespace fabkit::profile
