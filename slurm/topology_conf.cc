#include "slurm/topology_conf.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include "common/errors.h"
#include "common/hostlist.h"

namespace fabkit::slurm {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

[[noreturn]] void fail(const std::string& path, int line, const std::string& what) {
  throw UsageError("--topology " + path + ":" + std::to_string(line) + ": " + what);
}

const char* kLineFix =
    "each line is `SwitchName=NAME Nodes=HOSTLIST` (a leaf) or `SwitchName=NAME "
    "Switches=SWITCHLIST` (above leaves), as in Slurm's topology.conf(5)";

}  // namespace

TopologyConf parse_topology_conf(const std::string& text, const std::string& path) {
  TopologyConf conf;
  conf.path = path;
  std::map<std::string, int> defined;  // switch name -> line
  std::istringstream in(text);
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    std::string s = raw.substr(0, raw.find('#'));
    std::istringstream tokens(s);
    std::string tok;
    TopologySwitch sw;
    sw.line = line;
    bool any = false, has_name = false;
    while (tokens >> tok) {
      any = true;
      const size_t eq = tok.find('=');
      if (eq == std::string::npos || eq == 0)
        fail(path, line, "'" + tok + "' is not KEY=VALUE; " + kLineFix);
      const std::string key = lower(tok.substr(0, eq));
      const std::string value = tok.substr(eq + 1);
      if (key == "blockname" || key == "blocksizes")
        fail(path, line,
             tok.substr(0, eq) +
                 "= is Slurm's topology/block plugin; --topology reads the tree "
                 "plugin's switches: " +
                 kLineFix);
      if (key != "switchname" && key != "nodes" && key != "switches" && key != "linkspeed")
        fail(path, line,
             "unknown field " + tok.substr(0, eq) + "=; " + kLineFix +
                 " (LinkSpeed= is accepted and ignored)");
      if (value.empty())
        fail(path, line, tok.substr(0, eq) + "= has no value; give one or remove the field");
      if (key == "linkspeed") continue;
      if (key == "switchname") {
        if (has_name) fail(path, line, "two SwitchName= on one line; give one switch a line");
        has_name = true;
        sw.name = value;
        continue;
      }
      std::vector<std::string> names;
      try {
        names = expand_hostlist(value);
      } catch (const UsageError& e) {
        fail(path, line,
             tok.substr(0, eq) + "=" + value + " is not a Slurm hostlist (" + e.what() +
                 "); write it as n[001-032] or a,b,c");
      }
      auto& dst = key == "nodes" ? sw.nodes : sw.switches;
      dst.insert(dst.end(), names.begin(), names.end());
    }
    if (!any) continue;
    if (!has_name) fail(path, line, "no SwitchName=; " + std::string(kLineFix));
    if (sw.nodes.empty() && sw.switches.empty())
      fail(path, line, "switch " + sw.name + " has neither Nodes= nor Switches=; " + kLineFix);
    auto [it, fresh] = defined.emplace(sw.name, line);
    if (!fresh)
      fail(path, line,
           "SwitchName=" + sw.name + " is already defined at line " + std::to_string(it->second) +
               "; give each switch once");
    conf.switches.push_back(std::move(sw));
  }
  bool leaf = false;
  for (const auto& sw : conf.switches) {
    leaf = leaf || !sw.nodes.empty();
    for (const auto& child : sw.switches)
      if (!defined.count(child))
        fail(path, sw.line,
             "Switches= names " + child +
                 ", which no SwitchName= line defines; define it or remove it");
  }
  if (!leaf)
    throw UsageError("--topology " + path + ": no leaf switch (no SwitchName= line with Nodes=); " +
                     kLineFix);
  return conf;
}

FabricTopology topology_for_hosts(const TopologyConf& conf, const std::vector<std::string>& hosts,
                                  std::vector<std::string>* notes) {
  FabricTopology t;
  t.nodes = static_cast<int>(hosts.size());
  std::map<std::string, int> index;
  for (size_t i = 0; i < hosts.size(); ++i) index[hosts[i]] = static_cast<int>(i);
  std::vector<int> leaf_line(hosts.size(), 0);
  std::vector<const TopologySwitch*> leaf_switch(hosts.size(), nullptr);
  int doubled = 0;
  std::string doubled_first;
  for (const auto& sw : conf.switches)
    for (const auto& n : sw.nodes) {
      auto it = index.find(n);
      if (it == index.end()) continue;  // a node of the cluster outside this allocation
      auto& at = leaf_switch[static_cast<size_t>(it->second)];
      if (at && at != &sw) {
        if (doubled++ == 0)
          doubled_first = n + " under " + at->name + " (line " + std::to_string(at->line) +
                          ") and " + sw.name + " (line " + std::to_string(sw.line) + ")";
        continue;
      }
      at = &sw;
    }
  std::vector<std::string> missing;
  for (size_t i = 0; i < hosts.size(); ++i)
    if (!leaf_switch[i]) missing.push_back(hosts[i]);
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 5; ++i) list += (i ? ", " : "") + missing[i];
    throw UsageError("--topology " + conf.path + ": " + std::to_string(missing.size()) + " of " +
                     std::to_string(hosts.size()) + " hosts are under no leaf switch (" + list +
                     (missing.size() > 5 ? ", ..." : "") +
                     "); add them to a `SwitchName=... Nodes=...` line (names as the host list "
                     "gives them), or run without --topology");
  }
  // Leaves in file order, only those holding one of these hosts.
  std::map<const TopologySwitch*, int> leaf_index;
  for (const auto& sw : conf.switches)
    if (std::any_of(leaf_switch.begin(), leaf_switch.end(),
                    [&](const TopologySwitch* x) { return x == &sw; })) {
      leaf_index[&sw] = static_cast<int>(t.leaf_names.size());
      t.leaf_names.push_back(sw.name);
    }
  for (const auto* sw : leaf_switch) t.leaf_of.push_back(leaf_index.at(sw));
  if (doubled > 0 && notes)
    notes->push_back(std::to_string(doubled) + " host" + (doubled == 1 ? " is" : "s are") +
                     " under two leaves in " + conf.path + " (" + doubled_first +
                     "; one leaf per rail?): the plan places each on its first leaf");

  // Spines: the switches above these leaves, when every leaf hangs off every one of them.
  std::set<std::string> leaves(t.leaf_names.begin(), t.leaf_names.end());
  std::map<std::string, std::set<std::string>> parents;  // leaf -> spines above it
  std::set<std::string> spines;
  for (const auto& sw : conf.switches)
    for (const auto& child : sw.switches)
      if (leaves.count(child)) {
        parents[child].insert(sw.name);
        spines.insert(sw.name);
      }
  bool complete = !spines.empty();
  for (const auto& l : t.leaf_names) complete = complete && parents[l] == spines;
  if (complete) {
    t.spines = static_cast<int>(spines.size());
  } else if (notes) {
    notes->push_back(
        spines.empty()
            ? "no switch in " + conf.path +
                  " lists these hosts' leaves under Switches=: spines "
                  "unknown"
            : "the switches above the leaves in " + conf.path +
                  " do not each reach every leaf (a three-level tree or pods): spines unknown, "
                  "since the up-routing model assumes a two-level fat tree");
  }
  return t;
}

}  // namespace fabkit::slurm
