#include "probes/net/nccl_list.h"

#include <cctype>
#include <cstdlib>

namespace fabkit::probes {
namespace {

// NCCL converts the port with atoi(): leading blanks and a sign are accepted, anything that is not
// a number reads as 0, and digits stop at the first non-digit ("1x" -> 1).
int atoi_like(const std::string& s, bool* clean) {
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  long v = 0;
  size_t digits = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, ++digits)
    if (v < 1000000) v = v * 10 + (s[i] - '0');
  *clean = digits > 0 && i == s.size() && !neg;
  return static_cast<int>(neg ? -v : v);
}

bool has_space(const std::string& s) {
  for (char c : s)
    if (std::isspace(static_cast<unsigned char>(c))) return true;
  return false;
}

}  // namespace

NcclList parse_nccl_list(const std::string& text, size_t max_entries) {
  NcclList l;
  l.text = text;
  size_t pos = 0;
  if (pos < text.size() && text[pos] == '^') {
    l.exclude = true;
    ++pos;
  }
  if (pos < text.size() && text[pos] == '=') {
    l.exact = true;
    ++pos;
  }
  // parseStringList itself skips one more leading '^' or '=' (it expects its callers to have
  // looked at them): that is why "=^eth0" silently means "=eth0".
  if (pos < text.size() && (text[pos] == '^' || text[pos] == '=')) {
    if (text[pos] == '^')
      l.issues.push_back("'" + text + "': the '^' after '=' is ignored by NCCL, so this is an "
                         "include list, not an exclude list; write '^=" +
                         text.substr(pos + 1) + "' to exclude");
    else
      l.issues.push_back("'" + text + "': the repeated '" + std::string(1, text[pos]) +
                         "' is ignored by NCCL");
    ++pos;
  }

  const std::string body = text.substr(pos);
  size_t dropped = 0;
  for (const std::string& raw : [&] {
         std::vector<std::string> parts;
         size_t start = 0;
         for (size_t i = 0; i <= body.size(); ++i) {
           if (i == body.size() || body[i] == ',') {
             parts.push_back(body.substr(start, i - start));
             start = i + 1;
           }
         }
         return parts;
       }()) {
    NcclListEntry e;
    auto colon = raw.find(':');
    e.prefix = raw.substr(0, colon);
    if (e.prefix.empty()) {
      if (!raw.empty())
        l.issues.push_back("entry '" + raw + "' has no name before ':' and is ignored by NCCL");
      continue;
    }
    if (colon != std::string::npos) {
      bool clean = false;
      e.port = atoi_like(raw.substr(colon + 1), &clean);
      if (!clean || e.port <= 0)
        l.issues.push_back("entry '" + raw + "': NCCL reads the port with atoi() as " +
                           std::to_string(e.port) + (e.port <= 0 ? ", which matches no port" : ""));
    }
    if (has_space(e.prefix))
      l.issues.push_back("entry '" + e.prefix + "' contains whitespace; NCCL does not trim, so it "
                         "only matches names containing that whitespace");
    if (e.prefix.size() > kNcclMaxPrefixChars)
      l.issues.push_back("entry '" + e.prefix.substr(0, 20) + "...' is longer than " +
                         std::to_string(kNcclMaxPrefixChars) +
                         " characters and overflows NCCL's 64-byte name buffer");
    if (l.entries.size() >= max_entries) {
      ++dropped;
      continue;
    }
    l.entries.push_back(std::move(e));
  }
  if (dropped > 0)
    l.issues.push_back(std::to_string(dropped) + " entries past the first " +
                       std::to_string(max_entries) + " are silently dropped by NCCL");
  if (l.entries.empty() && (l.exclude || l.exact))
    l.issues.push_back("'" + text + "' names no interface; NCCL treats an empty list as \"use "
                       "everything\"");
  return l;
}

bool nccl_entry_matches(const NcclListEntry& e, bool exact, const std::string& name, int port) {
  bool name_ok = exact ? name == e.prefix : name.compare(0, e.prefix.size(), e.prefix) == 0;
  bool port_ok = e.port == -1 || port == -1 || e.port == port;
  return name_ok && port_ok;
}

bool nccl_list_selects(const NcclList& list, const std::string& name, int port) {
  if (list.entries.empty()) return true;  // matchIfList: no user list -> everything matches
  bool hit = false;
  for (const auto& e : list.entries) hit = hit || nccl_entry_matches(e, list.exact, name, port);
  return hit != list.exclude;
}

std::vector<std::string> nccl_list_select(const NcclList& list,
                                          const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names)
    if (nccl_list_selects(list, n)) out.push_back(n);
  return out;
}

std::vector<NcclListAmbiguity> nccl_list_ambiguities(const NcclList& list,
                                                     const std::vector<std::string>& names) {
  std::vector<NcclListAmbiguity> out;
  if (list.exact) return out;
  for (const auto& e : list.entries) {
    NcclListAmbiguity a{to_string(e), {}};
    for (const auto& n : names)
      if (nccl_entry_matches(e, false, n, -1)) a.matched.push_back(n);
    for (const auto& n : a.matched) a.names_one_device = a.names_one_device || n == e.prefix;
    if (a.matched.size() > 1) out.push_back(std::move(a));
  }
  return out;
}

std::vector<std::string> nccl_list_unmatched(const NcclList& list,
                                             const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& e : list.entries) {
    bool any = false;
    for (const auto& n : names) any = any || nccl_entry_matches(e, list.exact, n, -1);
    if (!any) out.push_back(to_string(e));
  }
  return out;
}

std::string to_string(const NcclListEntry& e) {
  return e.port == -1 ? e.prefix : e.prefix + ":" + std::to_string(e.port);
}

}  // namespace fabkit::probes
