#include "profile/builder.h"

#include <algorithm>
#include <set>

#include "common/build_info.h"
#include "common/errors.h"
#include "common/file_reader.h"
#include "profile/builder_settings.h"
#include "profile/value_rules.h"

namespace fabkit::profile {
namespace {

std::optional<std::vector<int>> parse_version(const std::string& v) {
  std::vector<int> out;
  for (const auto& part : split(v, '.')) {
    if (part.empty() || part.size() > 4 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    out.push_back(std::stoi(part));
  }
  if (out.size() < 2 || out.size() > 4) return std::nullopt;
  return out;
}

NcclInfo decide_nccl(const BuildOptions& o, const std::vector<PairVerdict>& pairs) {
  NcclInfo n;
  n.version_source = "unknown";
  if (o.nccl_version) {
    if (!parse_version(*o.nccl_version))
      throw UsageError("--nccl-version " + quote_for_message(*o.nccl_version) +
                       ": not a version like 2.18.3 (see `python -c \"import torch; "
                       "print(torch.cuda.nccl.version())\"`)");
    n.version = o.nccl_version;
    n.version_source = "--nccl-version";
    return n;
  }
  for (const auto& p : pairs)
    if (p.nccl_version && parse_version(*p.nccl_version)) {
      n.version = p.nccl_version;
      n.version_source = "pair report (" + p.summary + ")";
      return n;
    }
  return n;
}

// Evidence quotes report fields verbatim; a control character there would make the written
// profile unreadable (the reader refuses them), so it becomes a space.
void scrub(std::string& s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
}

void scrub(Setting& s) {
  scrub(s.reason);
  for (auto& e : s.evidence) scrub(e);
}

bool same(const Setting& a, const Setting& b) { return a.value == b.value && a.basis == b.basis; }

// Equal values on every host become one cluster setting; otherwise each host keeps its own
// (interface names differ between hosts: enp37s0f1 on one, eno1 on the other).
void fold(const std::string& var, const PerHost& per_host, size_t node_count, Profile& p) {
  bool uniform = per_host.size() == node_count &&
                 std::all_of(per_host.begin(), per_host.end(),
                             [&](const auto& kv) { return same(kv.second, per_host.begin()->second); });
  if (uniform) {
    Setting s = per_host.begin()->second;
    std::set<std::string> seen(s.evidence.begin(), s.evidence.end());
    for (const auto& [host, hs] : per_host)
      for (const auto& e : hs.evidence)
        if (seen.insert(e).second) s.evidence.push_back(e);
    p.settings[var] = s;
    return;
  }
  for (const auto& [host, s] : per_host) p.hosts[host][var] = s;
}

}  // namespace

std::optional<bool> version_less(const std::string& version, const std::string& than) {
  auto a = parse_version(version), b = parse_version(than);
  if (!a || !b) return std::nullopt;
  return *a < *b;
}

Profile build_profile(const std::vector<BuildInput>& inputs, const BuildOptions& o) {
  Profile p;
  p.provenance.created_at = o.created_at.empty() ? utc_now_rfc3339() : o.created_at;
  p.provenance.created_on = o.created_on;
  p.provenance.fabcheck_version = fabkit_version();
  std::vector<NodeFacts> nodes;
  std::vector<PairVerdict> pairs;
  for (const auto& in : inputs) {
    InputRef ref{in.live ? "live" : in.report.kind, in.report.hostname, in.report.generated_at,
                 in.source};
    if (in.report.kind == "node") {
      nodes.push_back(node_facts_from_report(in.report, in.source));
      for (size_t i = 0; i + 1 < nodes.size(); ++i)
        if (nodes[i].hostname == nodes.back().hostname)
          throw UsageError(in.source + ": host '" + nodes.back().hostname +
                           "' is already covered by another input; give one node report per host");
    } else if (in.report.kind == "pair") {
      auto v = pair_verdict_from_report(in.report, in.source);
      if (v) pairs.push_back(*v);
    } else {
      throw UsageError(in.source + ": field 'kind': value " + quote_for_message(in.report.kind) +
                       " is not node or pair; give `fabcheck node --json` or `fabcheck pair "
                       "--json` outputs");
    }
    for (auto* field : {&ref.hostname, &ref.generated_at, &ref.source}) scrub(*field);
    p.provenance.inputs.push_back(ref);
  }
  if (nodes.empty())
    throw UsageError("no node report among the inputs: a profile needs at least one "
                     "`fabcheck node --json > NODE.json` per host (pair reports add measurements)");

  p.nccl = decide_nccl(o, pairs);
  auto transport = choose_transport(nodes, pairs);
  auto chosen = choose_settings(nodes, pairs, transport, p.nccl, o.master_port);
  for (const auto& [var, per_host] : chosen) fold(var, per_host, nodes.size(), p);
  auto each_setting = [&](auto fn) {
    for (auto& [var, s] : p.settings) fn(s);
    for (auto& [host, vars] : p.hosts)
      for (auto& [var, s] : vars) fn(s);
  };
  each_setting([](Setting& s) { scrub(s); });
  if (o.unmeasured) each_setting([](Setting& s) { s.basis = Basis::kUnmeasured; });
  scrub(p.provenance.created_on);

  bool any_rdma = false;
  for (const auto& n : nodes) {
    NodeEntry e;
    e.hostname = n.hostname;
    bool measured = false;
    e.interface = chosen_interface(n, pairs, &measured);
    if (transport.rdma) e.hcas = chosen_ports(n);
    any_rdma = any_rdma || !n.active_ports.empty();
    e.gpu_count = n.gpu_count;
    e.locality = n.locality;
    e.topo_file = n.topo_file;
    if (n.efa) {
      e.efa_devices = n.efa->devices;
      if (n.efa->instance_type && !check_fabric_label(*n.efa->instance_type))
        e.instance_type = n.efa->instance_type;
      // EFA registers memory like any verbs device: unlimited memlock, /dev/infiniband inside.
      any_rdma = any_rdma || n.efa->devices > 0;
    }
    e.libfabric_version = n.libfabric_version;
    e.net_plugin_version = n.net_plugin_version;
    p.nodes.push_back(e);
    for (const auto& f : n.nccl_conf_files)
      if (std::find(p.container.binds.begin(), p.container.binds.end(), f) == p.container.binds.end())
        p.container.binds.push_back(f);
    if (n.topo_file && std::find(p.container.binds.begin(), p.container.binds.end(),
                                 *n.topo_file) == p.container.binds.end())
      p.container.binds.push_back(*n.topo_file);
  }
  p.container.network_host = true;  // NCCL needs the host's interfaces and RDMA netdevs
  p.container.memlock_unlimited = any_rdma;
  if (any_rdma) p.container.devices.push_back("/dev/infiniband");
  p.container.shm_size = "8g";  // containers default to 64 MiB; NCCL's SHM transport needs more
  return p;
}

}  // namespace fabkit::profile
