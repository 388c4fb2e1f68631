#include "common/hostlist.h"

#include <algorithm>
#include <cctype>

#include "common/errors.h"

namespace fabkit {
namespace {

[[noreturn]] void bad(const std::string& list, size_t pos, const std::string& what) {
  throw UsageError("host list '" + list + "' at position " + std::to_string(pos) + ": " + what +
                   " (expected forms like node[01-04,07],gpu-a[1-2])");
}

[[noreturn]] void too_many(const std::string& list, size_t pos) {
  bad(list, pos,
      "stands for more than " + std::to_string(kMaxHostlistHosts) +
          " hosts, more than any Slurm allocation holds; give the allocation's own "
          "SLURM_JOB_NODELIST or list the hosts");
}

[[noreturn]] void too_long(const std::string& list, size_t pos) {
  bad(list, pos,
      "a host name longer than " + std::to_string(kMaxHostNameChars) +
          " characters (no DNS name is longer)");
}

// One bracket body "01-04,07" -> the strings it stands for.
std::vector<std::string> expand_ranges(const std::string& list, const std::string& body, size_t at) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= body.size()) {
    size_t comma = body.find(',', i);
    if (comma == std::string::npos) comma = body.size();
    std::string item = body.substr(i, comma - i);
    if (item.empty()) bad(list, at + i, "empty range");
    size_t dash = item.find('-');
    std::string lo = item.substr(0, dash);
    std::string hi = dash == std::string::npos ? lo : item.substr(dash + 1);
    for (const std::string& s : {lo, hi}) {
      if (s.empty() || s.size() > 9) bad(list, at + i, "range bound '" + s + "' is not a number");
      for (char c : s) {
        if (!std::isdigit(static_cast<unsigned char>(c))) bad(list, at + i, "range bound '" + s + "' is not a number");
      }
    }
    long a = std::stol(lo), b = std::stol(hi);
    if (b < a) bad(list, at + i, "range " + item + " runs backwards");
    if (static_cast<size_t>(b - a) + 1 + out.size() > kMaxHostlistHosts) too_many(list, at + i);
    size_t width = lo.size();
    for (long v = a; v <= b; ++v) {
      std::string n = std::to_string(v);
      if (n.size() < width) n = std::string(width - n.size(), '0') + n;
      out.push_back(n);
    }
    i = comma + 1;
  }
  return out;
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& list) {
  std::vector<std::string> hosts;
  size_t i = 0;
  while (i < list.size()) {
    // One host expression runs to the next comma outside brackets.
    std::vector<std::string> partial{""};
    size_t longest = 0;  // of the names in partial
    size_t start = i;
    while (i < list.size() && list[i] != ',') {
      if (list[i] == '[') {
        size_t close = list.find(']', i);
        if (close == std::string::npos) bad(list, i, "'[' without ']'");
        auto parts = expand_ranges(list, list.substr(i + 1, close - i - 1), i + 1);
        // Checked before the product is built: two brackets multiply.
        if (partial.size() > (kMaxHostlistHosts - hosts.size()) / parts.size()) too_many(list, i);
        size_t widest = 0;
        for (const auto& q : parts) widest = std::max(widest, q.size());
        longest += widest;
        if (longest > kMaxHostNameChars) too_long(list, i);
        std::vector<std::string> next;
        for (const auto& p : partial) {
          for (const auto& q : parts) next.push_back(p + q);
        }
        partial.swap(next);
        i = close + 1;
      } else if (list[i] == ']') {
        bad(list, i, "']' without '['");
      } else if (std::isspace(static_cast<unsigned char>(list[i]))) {
        bad(list, i, "white space");
      } else {
        if (++longest > kMaxHostNameChars) too_long(list, i);
        for (auto& p : partial) p += list[i];
        ++i;
      }
    }
    if (i == start) bad(list, i, "empty host name");
    if (partial.size() > kMaxHostlistHosts - hosts.size()) too_many(list, start);
    hosts.insert(hosts.end(), partial.begin(), partial.end());
    if (i < list.size()) {
      ++i;  // the comma
      if (i == list.size()) bad(list, i, "trailing comma");
    }
  }
  if (hosts.empty()) bad(list, 0, "no hosts");
  return hosts;
}

}  // namespace fabkit
