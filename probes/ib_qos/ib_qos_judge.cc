// Findings for InfiniBand QoS (docs/findings/ib_qos.md has the sources). The SL-to-VL table and
// OperationalVLs are the subnet manager's to program: a host cannot change them, so the fixes for
// a bad mapping name the SM's configuration (opensm's qos_sl2vl / qos_ca_sl2vl and
// qos_max_vls), and for a mismatch with the SM's PathRecord, the NCCL_IB_SL to set.
#include <cstdlib>

#include "probes/ib_qos/ib_qos_facts.h"

namespace fabkit::probes {
namespace {

std::string subject(const IbQosPort& p) { return p.device + ":" + std::to_string(p.port); }

std::string sl_source(const IbQosFacts& f) {
  return f.nccl_ib_sl ? "NCCL_IB_SL=" + *f.nccl_ib_sl + " (" + f.nccl_ib_sl_source + ")"
                      : "NCCL's default SL 0 (NCCL_IB_SL unset)";
}

// The SLs of the table that reach a data VL, as a list for the fix.
std::string usable_sls(const std::array<int, 16>& t, int data_vls) {
  std::string s;
  for (int sl = 0; sl < 16; ++sl)
    if (t[sl] != 15 && t[sl] < data_vls) s += (s.empty() ? "" : ",") + std::to_string(sl);
  return s.empty() ? "none" : s;
}

std::string table_text(const std::array<int, 16>& t) {
  std::string s;
  for (int sl = 0; sl < 16; ++sl) s += (sl ? "," : "") + std::to_string(t[sl]);
  return s;
}

void judge_mapping(const IbQosFacts& f, const IbQosPort& p, int sl, std::vector<Finding>& out) {
  if (!p.sl2vl || !p.port_info) return;
  const int vl = (*p.sl2vl)[sl];
  const int data_vls = data_vl_count(p.port_info->oper_vls);
  const std::string s = subject(p);
  const std::string sm_fix =
      "the subnet manager programs this table, a host cannot change it: in opensm.conf map SL " +
      std::to_string(sl) + " to a data VL (qos TRUE, qos_ca_sl2vl / qos_sl2vl, e.g. " +
      "qos_sl2vl 0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7 for 8 VLs) and restart opensm (UFM: the same " +
      "in its QoS policy); or set NCCL_IB_SL to an SL that reaches a data VL here: " +
      usable_sls(*p.sl2vl, data_vls);
  if (vl == 15) {
    out.push_back(fail("ib_qos.sl_to_vl15", s,
                       s + ": " + sl_source(f) + " maps to VL15 in the port's SL-to-VL table (" +
                           table_text(*p.sl2vl) +
                           "); VL15 is the subnet management lane and drops every data packet, so "
                           "NCCL's QPs on this SL send nothing and the job hangs",
                       sm_fix));
  } else if (data_vls > 0 && vl >= data_vls) {
    out.push_back(fail("ib_qos.sl_vl_not_operational", s,
                       s + ": " + sl_source(f) + " maps to VL" + std::to_string(vl) +
                           ", but the port's OperationalVLs is " + vls_text(p.port_info->oper_vls) +
                           " (VLCap " + vls_text(p.port_info->vl_cap) + "): packets on VL" +
                           std::to_string(vl) + " are dropped and the job hangs",
                       sm_fix + " (or raise OperationalVLs: opensm qos_max_vls / qos_ca_max_vls, "
                                "up to the VLCap)"));
  }
}

void judge_paths(const IbQosFacts& f, const IbQosPort& p, int sl, std::vector<Finding>& out) {
  const std::string s = subject(p);
  for (size_t i = 0; i < p.paths.size(); ++i) {
    const IbPathQuery& q = p.paths[i];
    const std::string to = i == 0 ? "its own GID " + q.dgid : "the peer's GID " + q.dgid;
    if (q.status != "ok" || !q.record) {
      out.push_back(info("ib_qos.path_record_unavailable", s,
                         s + ": no PathRecord from the SA to " + to + " (" + q.status + ": " +
                             q.detail + "); the SL the SM's QoS policy wants cannot be checked"));
      continue;
    }
    if (q.record->sl == sl) continue;
    out.push_back(warn(
        "ib_qos.path_sl_differs", s,
        s + ": the subnet manager's PathRecord to " + to + " gives SL " +
            std::to_string(q.record->sl) + ", but NCCL will use SL " + std::to_string(sl) + " (" +
            sl_source(f) +
            "); NCCL does not ask the SA, so its traffic skips the VL and arbitration the SM's QoS "
            "policy set up for this path",
        "export NCCL_IB_SL=" + std::to_string(q.record->sl) +
            " (or put it in the profile: fabcheck profile derives it); if SL " +
            std::to_string(sl) + " is meant, change the SM's QoS policy instead"));
  }
}

}  // namespace

int nccl_sl(const IbQosFacts& f, bool* invalid) {
  if (invalid) *invalid = false;
  if (!f.nccl_ib_sl) return 0;
  const std::string& v = *f.nccl_ib_sl;
  char* end = nullptr;
  long n = v.empty() ? -1 : std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 0 || n > 15) {
    if (invalid) *invalid = true;
    return 0;
  }
  return static_cast<int>(n);
}

std::vector<Finding> judge_ib_qos(const IbQosFacts& f) {
  std::vector<Finding> out;
  bool invalid = false;
  const int sl = nccl_sl(f, &invalid);
  if (invalid && !f.ports.empty())
    out.push_back(warn("ib_qos.nccl_sl_invalid", "NCCL_IB_SL",
                       "NCCL_IB_SL='" + *f.nccl_ib_sl + "' (" + f.nccl_ib_sl_source +
                           ") is not a service level 0..15; NCCL reads it as a number and the QPs "
                           "may carry a different SL than meant",
                       "set NCCL_IB_SL to 0..15 (the SL the subnet manager's PathRecord gives), "
                       "or unset it for SL 0"));
  for (const auto& p : f.ports) {
    const std::string s = subject(p);
    if (p.status == "unavailable" || p.status == "error") {
      out.push_back(info("ib_qos.unavailable", s,
                         s + ": the SL-to-VL table and OperationalVLs could not be read (" +
                             p.status + ": " + p.detail +
                             "); a job whose SL maps to a dropped VL hangs without an error"));
      continue;
    }
    if (p.status != "ok") continue;
    if (p.active) judge_mapping(f, p, sl, out);
    judge_paths(f, p, sl, out);
    if (!p.sl2vl || !p.port_info) continue;
    std::string path_sl = "no PathRecord";
    if (!p.paths.empty() && p.paths[0].record) path_sl = std::to_string(p.paths[0].record->sl);
    out.push_back(info("ib_qos.nccl_sl", s,
                       s + ": NCCL's SL " + std::to_string(sl) + " (" + sl_source(f) + ") -> VL" +
                           std::to_string((*p.sl2vl)[sl]) + "; OperationalVLs " +
                           vls_text(p.port_info->oper_vls) + " of VLCap " +
                           vls_text(p.port_info->vl_cap) + "; the SM's PathRecord SL: " + path_sl));
  }
  return out;
}

}  // namespace fabkit::probes
