#include <algorithm>
#include <map>

#include "common/file_reader.h"
#include "common/root_open.h"
#include "probes/nccl_env/nccl_env_facts.h"
#include "common/utf8_text.h"

namespace fabkit::probes {
namespace {

// Other variables a NCCL job's transport depends on.
const char* kAlsoRelevant[] = {
    "GLOO_SOCKET_IFNAME", "GLOO_DEVICE_TRANSPORT", "TP_SOCKET_IFNAME", "MASTER_ADDR", "MASTER_PORT",
    "FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "UCX_NET_DEVICES", "CUDA_VISIBLE_DEVICES",
    // libfabric's EFA provider (fi_efa(7)) and libibverbs' fork
    // support, judged by the efa probe against the instance.
    "FI_EFA_FORK_SAFE", "FI_EFA_USE_HUGE_PAGE", "FI_HMEM_CUDA_USE_GDRCOPY",
    "FI_EFA_SET_CUDA_SYNC_MEMOPS", "FI_EFA_IFACE", "RDMAV_FORK_SAFE", "IBV_FORK_SAFE"};

}  // namespace

bool is_nccl_relevant(const std::string& name) {
  if (starts_with(name, "NCCL_") || starts_with(name, "TORCH_NCCL_") ||
      starts_with(name, "OFI_NCCL_"))
    return true;
  for (const char* n : kAlsoRelevant)
    if (name == n) return true;
  return false;
}

NcclConfFile parse_nccl_conf(const std::string& path, const std::string& role,
                             const std::string& text) {
  NcclConfFile f;
  f.path = path;
  f.role = role;
  f.present = true;
  size_t lineno = 0;
  // Invalid UTF-8 bytes become U+FFFD here so reports can always be rendered as JSON.
  for (std::string line : split(utf8_clean(text), '\n')) {
    ++lineno;
    // setEnvFile(): '#' only in column 0 starts a comment; the name is everything before the
    // first '=', the value everything after; nothing is trimmed; lines without '=' are skipped.
    if (line.empty() || line[0] == '#') continue;
    auto eq = line.find('=');
    std::string where = path + ":" + std::to_string(lineno);
    if (eq == std::string::npos) {
      if (!trim(line).empty())
        f.issues.push_back(where + ": '" + line + "' has no '=' and is ignored by NCCL");
      continue;
    }
    std::string name = line.substr(0, eq), value = line.substr(eq + 1);
    if (name.empty()) continue;  // setenv("") fails
    if (trim(name) != name)
      f.issues.push_back(where + ": the name '" + name + "' has surrounding whitespace; NCCL sets a "
                         "variable with that exact name, which nothing reads");
    if (!value.empty() && value.back() == '\r')
      f.issues.push_back(where + ": the value of " + trim(name) + " ends in a carriage return "
                         "(a CRLF file); NCCL keeps it as part of the value");
    else if (trim(value) != value)
      f.issues.push_back(where + ": the value of " + trim(name) + " has surrounding whitespace, "
                         "which NCCL keeps");
    if (!trim(line).empty() && line[0] != '#' && trim(line)[0] == '#')
      f.issues.push_back(where + ": an indented '#' is not a comment for NCCL");
    f.entries.emplace_back(name, value);
  }
  return f;
}

std::vector<NcclVariable> resolve_nccl_variables(const Environment& env,
                                                 const std::vector<NcclConfFile>& files) {
  std::map<std::string, NcclVariable> vars;
  for (const auto& [k, v] : env.vars())
    if (is_nccl_relevant(k)) vars[k] = NcclVariable{utf8_clean(k), utf8_clean(v), "environment", {}};
  for (const auto& f : files)
    for (const auto& [k, v] : f.entries) {
      auto it = vars.find(k);
      if (it == vars.end())
        vars[k] = NcclVariable{k, v, f.path, {}};
      else
        it->second.overridden.push_back(f.path + ": " + v);  // setenv(..., 0) keeps the first
    }
  std::vector<NcclVariable> out;
  for (auto& [k, v] : vars) out.push_back(std::move(v));
  return out;
}

NcclEnvFacts gather_nccl_env(const ProbeContext& ctx) {
  NcclEnvFacts f;
  std::vector<std::pair<std::filesystem::path, std::string>> paths;
  // NCCL reads NCCL_CONF_FILE with getenv(): only the process environment can set it.
  if (auto user = ctx.env.get("NCCL_CONF_FILE"); user && !user->empty())
    paths.emplace_back(*user, "NCCL_CONF_FILE");
  else if (!ctx.roots.home.empty())
    paths.emplace_back(ctx.roots.home / ".nccl.conf", "~/.nccl.conf");
  paths.emplace_back(ctx.roots.etc / "nccl.conf", "/etc/nccl.conf");
  for (const auto& [p, role] : paths) {
    if (!path_exists(p)) {
      NcclConfFile missing;
      missing.path = p.string();
      missing.role = role;
      f.files_read.push_back(missing);
      continue;
    }
    auto text = read_text(p);
    if (!ok(text)) {
      NcclConfFile bad;
      bad.path = p.string();
      bad.role = role;
      bad.present = true;
      bad.error = error(text).to_string();
      f.files_read.push_back(bad);
      continue;
    }
    f.files_read.push_back(parse_nccl_conf(p.string(), role, value(text)));
  }
  f.variables = resolve_nccl_variables(ctx.env, f.files_read);
  if (const NcclVariable* t = find_variable(f, "NCCL_TOPO_FILE"); t && !t->value.empty()) {
    f.topo_file = t->value;
    f.topo_file_present = std::filesystem::is_regular_file(t->value);
  }
  return f;
}

const NcclVariable* find_variable(const NcclEnvFacts& f, const std::string& name) {
  for (const auto& v : f.variables)
    if (v.name == name) return &v;
  return nullptr;
}

NetSettings net_settings(const NcclEnvFacts& f) {
  NetSettings s;
  if (const auto* v = find_variable(f, "NCCL_SOCKET_IFNAME")) {
    s.socket_ifname = v->value;
    s.socket_ifname_source = v->source;
  }
  if (const auto* v = find_variable(f, "NCCL_COMM_ID")) s.comm_id = v->value;
  if (const auto* v = find_variable(f, "NCCL_SOCKET_FAMILY")) s.socket_family = v->value;
  if (const auto* v = find_variable(f, "GLOO_SOCKET_IFNAME")) s.gloo_socket_ifname = v->value;
  return s;
}

Json to_json(const NcclEnvFacts& f) {
  Json j;
  j["variables"] = Json::array();
  for (const auto& v : f.variables)
    j["variables"].push_back({{"name", v.name},
                              {"value", v.value},
                              {"source", v.source},
                              {"overridden", v.overridden}});
  j["files_read"] = Json::array();
  for (const auto& file : f.files_read)
    j["files_read"].push_back({{"path", file.path},
                               {"role", file.role},
                               {"present", file.present},
                               {"error", file.error ? Json(*file.error) : Json(nullptr)},
                               {"entries", file.entries.size()},
                               {"issues", file.issues}});
  j["topo_file"] = f.topo_file ? Json{{"path", *f.topo_file}, {"present", f.topo_file_present}}
                               : Json(nullptr);
  return j;
}

}  // namespace fabkit::probes
