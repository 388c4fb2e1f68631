// See nccl_log_text.h. Hand-scanned where the parser calls it on every line (the budget is 50 ms
// per MB, docs/nccl-log.md); std::regex only for NCCL's device list, printed once per process.
#include "fabric/nccl_log/nccl_log_text.h"

#include <cctype>
#include <regex>

namespace fabkit::nccl_log {
namespace {
using sv = std::string_view;
bool starts(sv s, sv p) { return s.substr(0, p.size()) == p; }
}  // namespace

std::string trim_copy(sv s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return std::string(s);
}

bool ascii_only(sv s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

// "[0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"
void parse_ib_using(const std::string& msg, NcclLogSummary& s) {
  // 2.3 wrote "NET/IB: [0] mlx4_0:2/RoCE" (a space after the index).
  static const std::regex dev(R"(\[(\d+)\] ?([^\s:\[\]]+):(\d+)/(IB|RoCE))");
  auto semi = msg.find("; OOB ");
  std::string devs = msg.substr(0, semi);
  s.hcas.clear();
  s.hca_link_layers.clear();
  for (std::sregex_iterator it(devs.begin(), devs.end(), dev), end; it != end; ++it) {
    s.hcas.push_back((*it)[2].str() + ":" + (*it)[3].str());
    s.hca_link_layers.push_back((*it)[4].str());
  }
  if (semi != std::string::npos) s.ib_oob_interface = trim_copy(sv(msg).substr(semi + 6));
}

// The SHARP plugin names its network after the plugin API it was built for ("IBext_v6",
// "IBext_v8", "IBext_v10" in `Using network` and channel lines): the network is the same.
std::string network_name(std::string net) {
  const size_t v = net.rfind("_v");
  if (v == std::string::npos || v == 0 || v + 2 >= net.size()) return net;
  for (size_t i = v + 2; i < net.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(net[i]))) return net;
  net.resize(v);
  return net;
}

// "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA" (2.3-2.6: "Ring 00 : 1 -> 0 via
// NET/IB/0"); the network name may hold spaces ("NET/AWS Libfabric/0"). Scanned by hand: channel
// lines are a large share of a long log, and std::regex costs microseconds per line.
bool parse_channel(sv msg, NcclChannelLine* out) {
  if (!starts(msg, "Channel ") && !starts(msg, "Ring ")) return false;
  const size_t via = msg.find("via NET/");
  if (via == sv::npos) return false;
  const sv rest = msg.substr(via + 8);
  for (size_t slash = rest.find('/'); slash != sv::npos; slash = rest.find('/', slash + 1)) {
    size_t i = slash + 1;
    int dev = 0, n = 0;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i])) && n < 6)
      dev = dev * 10 + (rest[i++] - '0'), ++n;
    if (n == 0 || slash == 0 || (i < rest.size() && rest[i] != '/' && rest[i] != ' ')) continue;
    out->network = network_name(trim_copy(rest.substr(0, slash)));
    out->device = dev;
    out->gdr = rest.substr(i, 7) == "/GDRDMA";
    return true;
  }
  return false;
}

// GitHub turns file names and addresses in a pasted log into links: "transport/[net_ib.cc:101](
// http://net_ib.cc:101/)", "[10.1.3.201](http://10.1.3.201/)<33057>". Back to the text.
std::string strip_markdown_links(sv raw) {
  std::string out;
  out.reserve(raw.size());
  size_t i = 0;
  while (i < raw.size()) {
    const size_t open = raw.find('[', i);
    const size_t mid = open == sv::npos ? sv::npos : raw.find("](http", open);
    const size_t close = mid == sv::npos ? sv::npos : raw.find(')', mid);
    if (close == sv::npos ||
        raw.substr(open + 1, mid - open - 1).find_first_of("[] ") != sv::npos) {
      out.append(raw.substr(i, open == sv::npos ? sv::npos : open + 1 - i));
      if (open == sv::npos) break;
      i = open + 1;
      continue;
    }
    out.append(raw.substr(i, open - i));
    out.append(raw.substr(open + 1, mid - open - 1));
    i = close + 1;
  }
  return out;
}

// ncclResult_t as NCCL's error trace prints it ("file.cc:N -> 2"), as a failure kind.
const char* kind_of_return_code(int code, bool in_bootstrap) {
  return in_bootstrap             ? "bootstrap_failed"
         : code == 1              ? "cuda_error"
         : code == 2              ? "nccl_system_error"
         : code == 6              ? "nccl_remote_error"
         : code == 4 || code == 5 ? "nccl_invalid_usage"
                                  : "nccl_internal_error";
}

std::string explain(const FailureKind& k) {
  std::string s = k.meaning;
  s += "; likely causes:";
  for (size_t i = 0; i < k.causes.size(); ++i)
    s += " " + std::to_string(i + 1) + ") " + k.causes[i] + (i + 1 < k.causes.size() ? ";" : "");
  return s;
}

}  // namespace fabkit::nccl_log
