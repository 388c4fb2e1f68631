#include "common/hostlist.h"

#include <cctype>

#include "common/errors.h"

namespace fabkit {
namespace {

[[noreturn]] void bad(const std::string& list, size_t pos, const std::string& what) {
  throw UsageError("host list '" + list + "' at position " + std::to_string(pos) + ": " + what +
                   " (expected forms like node[01-04,07],gpu-a[1-2])");
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
    if (b - a > 100000) bad(list, at + i, "range " + item + " is implausibly large");
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
    size_t start = i;
    while (i < list.size() && list[i] != ',') {
      if (list[i] == '[') {
        size_t close = list.find(']', i);
        if (close == std::string::npos) bad(list, i, "'[' without ']'");
        auto parts = expand_ranges(list, list.substr(i + 1, close - i - 1), i + 1);
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
        for (auto& p : partial) p += list[i];
        ++i;
      }
    }
    if (i == start) bad(list, i, "empty host name");
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
