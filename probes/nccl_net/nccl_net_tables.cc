// The tables the net-plugin probe reads: which plugin API versions each NCCL release loads, the
// names NCCL tries, and how each plugin embeds its version.
#include <strings.h>
#include <cstring>

#include "common/file_reader.h"
#include "probes/nccl_net/nccl_net_facts.h"

namespace fabkit::probes {
namespace {

// The ncclNetPlugin_vN symbols each NCCL release dlsym()s, from NVIDIA/nccl at every v2.X.Y-1 tag
// (`git grep -o 'ncclNetPlugin_v[0-9]+' <tag> -- src`: src/init.cc before 2.19's src/net.cc, and
// src/plugin/net/net_vN.cc since 2.23). Rows with the same set are merged.
struct ApiRow {
  int first_minor, last_minor;
  std::vector<int> versions;  // newest first, the order NCCL tries them
};
const ApiRow kApiRows[] = {
    {4, 5, {2}},
    {6, 7, {3}},
    {8, 11, {4}},
    {12, 12, {5, 4}},
    {13, 18, {6, 5, 4}},
    {19, 19, {7, 6, 5}},
    {20, 23, {8, 7, 6, 5}},
    {24, 25, {9, 8, 7, 6, 5}},
    {26, 27, {10, 9, 8, 7, 6}},
    {28, 29, {11, 10, 9, 8, 7, 6}},
    {30, 30, {12, 11, 10, 9, 8, 7, 6}},
};

// Each plugin's version, as its source embeds it in .rodata:
//  - aws-ofi-nccl: "Initializing " PACKAGE_STRING (src/nccl_ofi_net.cpp; AC_INIT([aws-ofi-nccl],
//    [X.Y.Z]) in configure.ac), logged as "NET/OFI Initializing aws-ofi-nccl 1.7.4-aws";
//  - GPUDirect-TCPX: "NET/" PRODUCT_NAME " ver. " TCPX_VERSION_STRING (src/net_tcpx.cc:694 of
//    google/nccl-plugin-gpudirecttcpx@4b8ea7f, "3.1.9." with its empty suffix);
//  - libnccl: "NCCL version 2.28.9+cuda13.0" (src/init.cc's version banner).
struct Marker {
  const char* text;
  const char* kind;
};
const Marker kMarkers[] = {
    {"aws-ofi-nccl ", "aws-ofi-nccl"},
    {"GPUDirectTCPX ver. ", "gpudirect-tcpx"},
    {"NCCL version ", "nccl"},
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<int> nccl_net_api_versions(int minor) {
  for (const auto& r : kApiRows)
    if (minor >= r.first_minor && minor <= r.last_minor) return r.versions;
  return {};
}

int newest_known_nccl_minor() { return std::end(kApiRows)[-1].last_minor; }

std::string nccl_release_introducing(int api_version) {
  for (const auto& r : kApiRows)
    for (int v : r.versions)
      if (v == api_version) return "2." + std::to_string(r.first_minor);
  return "";
}

std::optional<std::vector<int>> parse_dotted_version(const std::string& v) {
  std::vector<int> parts;
  for (const auto& p : split(v, '.')) {
    if (p.empty() || p.size() > 6) return std::nullopt;
    int n = 0;
    for (char c : p) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + (c - '0');
    }
    parts.push_back(n);
  }
  if (parts.size() < 2) return std::nullopt;
  return parts;
}

std::vector<LdSoConfLine> parse_ld_so_conf(const std::string& text) {
  std::vector<LdSoConfLine> out;
  for (std::string line : split(text, '\n')) {
    // ldconfig's parse_conf: '#' starts a comment anywhere; a line may list several directories
    // separated by whitespace, ':' or ','.
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    if (line.compare(0, 8, "include ") == 0 || line.compare(0, 8, "include\t") == 0) {
      for (const auto& g : split(trim(line.substr(8)), ' '))
        if (!trim(g).empty()) out.push_back({"", trim(g)});
      continue;
    }
    if (line.compare(0, 6, "hwcap ") == 0) continue;
    std::string cur;
    for (char c : line + " ") {
      if (c == ' ' || c == '\t' || c == ':' || c == ',') {
        if (!cur.empty()) out.push_back({cur, ""});
        cur.clear();
      } else {
        cur += c;
      }
    }
  }
  return out;
}

std::vector<std::string> plugin_names_to_try(const std::optional<std::string>& requested) {
  if (!requested) return {"libnccl-net.so"};
  if (strcasecmp(requested->c_str(), "none") == 0) return {};
  std::vector<std::string> out;
  for (const auto& name : split(*requested, ',')) {
    if (name.empty()) continue;  // strtok_r skips empty fields
    out.push_back(name);
    // openPluginLib tries the name as given, then libnccl-net-<name>.so unless the name is a path
    // or already a library name (starts with "lib" and ends with ".so").
    bool is_path = name.find('/') != std::string::npos;
    bool is_lib_name = name.compare(0, 3, "lib") == 0 && ends_with(name, ".so");
    if (!is_path && !is_lib_name) out.push_back("libnccl-net-" + name + ".so");
  }
  return out;
}

void classify_library(LibraryFile& f) {
  std::vector<std::string> texts = f.elf.rodata_versions;
  f.kind = "unknown";
  f.version.clear();
  for (const auto& m : kMarkers)
    for (const auto& t : texts)
      if (t.compare(0, strlen(m.text), m.text) == 0) {
        f.kind = m.kind;
        f.version = t.substr(strlen(m.text));
        while (!f.version.empty() && f.version.back() == '.') f.version.pop_back();
        return;
      }
  // TCPXO (FasTrak) and gIB ship as binaries only, with no version text known to us: the
  // directories GCP installs them in name them (container-engine-accelerators@992db81:
  // gpudirect-tcpxo/README.md's /usr/local/tcpxo/lib64; gpudirect-rdma's
  // LD_LIBRARY_PATH="/usr/local/gib/lib64:...", nccl-test-a4x-max-jobset.yaml).
  if (f.path.find("/tcpxo/") != std::string::npos)
    f.kind = "gpudirect-tcpxo";
  else if (f.path.find("/gib/") != std::string::npos)
    f.kind = "gib";
}

std::vector<std::string> version_markers() {
  std::vector<std::string> out;
  for (const auto& m : kMarkers) out.push_back(m.text);
  return out;
}

}  // namespace fabkit::probes
