// What an NVIDIA Xid means and what to do about it: the codes a GPU node meets, from NVIDIA's
// catalog and the peers' checks (xid_catalog.cc names the sources). The class decides the
// severity: drain (the GPU or node needs a reset, a reboot or an RMA; a Slurm health check drains
// the node), application (the job that caused it failed; the GPU is fine: a note, as the peers
// ignore these), informational (a consequence of another event, or an error that needs nothing).
#pragma once

#include <optional>
#include <string>

namespace fabkit::probes {

enum class XidClass {
  kDrain,          // fail: reset, reboot or RMA before the GPU takes work again
  kApplication,    // info: the application faulted or was torn down; the GPU stays usable
  kInformational,  // info: follows another Xid or an operator action, or needs no action
  kByMessage,      // decided by the line itself (NVLink5 Xids 144-150 say "Fatal"/"Nonfatal";
                   // Xid 154 names the recovery action)
};
const char* to_string(XidClass c);  // "drain", "application", "informational", "by_message"

struct XidInfo {
  int xid = 0;
  const char* name = "";     // NVIDIA's description: "GPU has fallen off the bus"
  const char* meaning = "";  // what happened, in a sentence
  const char* action = "";   // what to do
  XidClass cls = XidClass::kApplication;
};

// nullptr for an Xid not in the table (the judge warns and points to the catalog).
const XidInfo* find_xid(int xid);

// The class a line of an Xid that kByMessage decides says: Xids 144-150 print "Fatal" (drain) or
// "Nonfatal" (informational) after the unit name; Xid 154 "GPU recovery action changed from 0x0
// (None) to 0x2 (Node Reboot Required)" asks for a drain unless the new action is None. nullopt:
// the text does not say (treated as a drain by the judge, as NVIDIA's catalog lists reset for the
// fatal cases).
std::optional<XidClass> xid_class_from_message(int xid, const std::string& detail);
// Xid 154's new recovery action ("Node Reboot Required"); "" when the line is not one.
std::string xid154_action(const std::string& detail);

}  // namespace fabkit::probes
