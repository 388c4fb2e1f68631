#include "profile/value_rules.h"

#include <cctype>
#include <set>

#include "common/file_reader.h"
#include "common/json.h"

namespace fabkit::profile {
namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

RuleError check_int_range(const std::string& v, long lo, long hi) {
  if (v.empty() || v.size() > 6) return "is not an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
  for (char c : v)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return "is not an integer in " + std::to_string(lo) + ".." + std::to_string(hi);
  long n = std::stol(v);
  if (n < lo || n > hi)
    return "is out of range " + std::to_string(lo) + ".." + std::to_string(hi);
  return std::nullopt;
}

// NCCL's list grammar (docs/architecture.md, "Facts that shaped the code"): optional leading '^' (exclude), then optional '=' (exact),
// then a comma list. `=^` is not valid NCCL syntax.
RuleError check_nccl_list(const std::string& v, bool hca_entries) {
  size_t i = 0;
  if (i < v.size() && v[i] == '^') ++i;
  if (i < v.size() && v[i] == '=') ++i;
  std::string body = v.substr(i);
  if (body.empty()) return std::string("has no entries after the '^'/'=' prefix");
  if (body.find('^') != std::string::npos || body.find('=') != std::string::npos)
    return std::string("has '^' or '=' inside the list; only '^' then '=' may lead the value");
  for (const auto& entry : split(body, ',')) {
    if (entry.empty()) return std::string("has an empty list entry");
    std::string name = entry;
    if (hca_entries) {
      auto colon = entry.find(':');
      if (colon != std::string::npos) {
        name = entry.substr(0, colon);
        if (check_int_range(entry.substr(colon + 1), 1, 255))
          return "entry " + quote_for_message(entry) + " has a port that is not 1..255";
      }
      if (name.empty() || name.size() > 63)
        return "entry " + quote_for_message(entry) + " is not a device name";
      for (char c : name)
        if (!is_name_char(c)) return "entry " + quote_for_message(entry) + " is not a device name";
    } else if (auto e = check_interface_name(name)) {
      return "entry " + quote_for_message(entry) + " " + *e;
    }
  }
  return std::nullopt;
}

}  // namespace

RuleError check_safe_chars(const std::string& value) {
  for (char c : value) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || std::string("_@%+=:,./^-").find(c) != std::string::npos;
    if (!ok) {
      if (std::isprint(static_cast<unsigned char>(c)) || c == ' ')
        return std::string("contains the shell metacharacter '") + c + "'";
      return "contains the control or non-ASCII byte 0x" +
             std::string(1, "0123456789abcdef"[(c >> 4) & 0xf]) + "0123456789abcdef"[c & 0xf];
    }
  }
  return std::nullopt;
}

RuleError check_interface_name(const std::string& name) {
  if (name.empty() || name.size() > 15)
    return std::string("is not a valid interface name (1-15 characters, Linux IFNAMSIZ)");
  if (name == "." || name == "..") return std::string("is not a valid interface name");
  for (char c : name)
    if (!is_name_char(c))
      return std::string("is not a valid interface name (allowed: A-Z a-z 0-9 _ . -)");
  return std::nullopt;
}

RuleError check_hostname(const std::string& name) {
  if (name.empty() || name.size() > 253)
    return std::string("is not a valid host name (1-253 characters)");
  for (char c : name)
    if (!is_name_char(c)) return std::string("is not a valid host name (allowed: A-Z a-z 0-9 _ . -)");
  return std::nullopt;
}

RuleError check_variable_value(const std::string& var, const std::string& v) {
  if (v.size() > kMaxValueBytes)
    return "is " + std::to_string(v.size()) + " bytes long, over the limit of " +
           std::to_string(kMaxValueBytes) + " bytes for a value";
  if (auto e = check_safe_chars(v)) return e;
  if (var == "NCCL_SOCKET_IFNAME") return check_nccl_list(v, false);
  if (var == "NCCL_IB_HCA") return check_nccl_list(v, true);
  if (var == "GLOO_SOCKET_IFNAME") {
    // Gloo (torch) takes a plain comma list of interface names: no NCCL prefixes.
    for (const auto& name : split(v, ','))
      if (auto e = check_interface_name(name)) return "entry " + quote_for_message(name) + " " + *e;
    return std::nullopt;
  }
  if (var == "NCCL_IB_GID_INDEX") return check_int_range(v, 0, 255);
  if (var == "NCCL_IB_TC") return check_int_range(v, 0, 255);
  if (var == "NCCL_IB_SL") return check_int_range(v, 0, 15);
  if (var == "NCCL_IB_DISABLE") return check_int_range(v, 0, 1);
  if (var == "NCCL_NET_GDR_LEVEL") {
    static const std::set<std::string> kLevels = {"LOC", "PIX", "PXB", "PHB", "SYS"};
    if (kLevels.count(v)) return std::nullopt;
    if (!check_int_range(v, 0, 5)) return std::nullopt;
    return std::string("is not a path level (LOC, PIX, PXB, PHB, SYS or 0..5)");
  }
  if (var == "NCCL_TOPO_FILE") {
    if (v.empty() || v[0] != '/') return std::string("is not an absolute path");
    if (v.find("/../") != std::string::npos) return std::string("contains '/../'");
    return std::nullopt;
  }
  // IB verbs: timeout is a 5-bit field (4.096 us * 2^t), retry count a 3-bit field.
  if (var == "NCCL_IB_TIMEOUT") return check_int_range(v, 1, 31);
  if (var == "NCCL_IB_RETRY_CNT") return check_int_range(v, 0, 7);
  if (var == "TORCH_NCCL_ASYNC_ERROR_HANDLING") return check_int_range(v, 0, 3);
  if (var == "MASTER_PORT") return check_int_range(v, 1, 65535);
  // fi_getinfo(3) FI_PROVIDER: a comma list of provider names ("efa", "shm"), or one prefixed
  // with '^' to leave them out. Layered names ("tcp;ofi_rxm") are refused above: ';' ends a
  // shell command.
  if (var == "FI_PROVIDER") {
    const std::string list = !v.empty() && v[0] == '^' ? v.substr(1) : v;
    for (const auto& name : split(list, ',')) {
      if (name.empty()) return std::string("has an empty provider name");
      for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
          return "entry " + quote_for_message(name) +
                 " is not a libfabric provider name (a-z 0-9 _)";
    }
    return std::nullopt;
  }
  // fabkit writes libfabric's booleans as 0/1 (fi_param_get_bool also reads yes/no/on/off).
  if (var == "FI_EFA_USE_DEVICE_RDMA" || var == "FI_EFA_FORK_SAFE" ||
      var == "FI_EFA_USE_HUGE_PAGE" || var == "FI_EFA_SET_CUDA_SYNC_MEMOPS")
    return check_int_range(v, 0, 1);
  return std::string("belongs to no known variable");
}

RuleError check_fabric_label(const std::string& v) {
  if (v.empty() || v.size() > 128) return std::string("is not 1-128 characters long");
  for (char c : v)
    if (!is_name_char(c) && c != '+' && c != ':' && c != '~')
      return std::string("is not a version or instance type (allowed: A-Z a-z 0-9 _ . - + : ~)");
  return std::nullopt;
}

std::string quote_for_message(const std::string& value) {
  std::string v = value.size() > 80 ? value.substr(0, 80) + "..." : value;
  // replace: a value cut inside a UTF-8 sequence must still print.
  return Json(v).dump(-1, ' ', true, Json::error_handler_t::replace);
}

std::string show_json_value(const Json& value) {
  if (value.is_string()) return quote_for_message(value.get<std::string>());
  std::string text = value.dump(-1, ' ', true, Json::error_handler_t::replace);
  return text.size() > 80 ? text.substr(0, 80) + "..." : text;
}

}  // namespace fabkit::profile
