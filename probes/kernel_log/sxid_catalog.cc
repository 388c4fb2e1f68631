// Sources (read 2026-12-05):
//  [F] NVIDIA, "Fabric Manager for NVIDIA NVSwitch Systems" user guide (DU-09883-001), appendix
//      "NVSwitch SXid Errors"
//      (https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/): the non-fatal SXids
//      with their impact and recovery, the potentially fatal (D.5) and always fatal (D.6) ones; a
//      fatal SXid is also propagated to the GPUs as Xid 74.
//  [G] leptonai/gpud@4a8de33a, components/accelerator/nvidia/sxid/sxid.go: [F]'s table with an
//      event type per SXid (Fatal: the node is Unhealthy; Warning: it stays Healthy).
//  [I] imbue-ai/cluster-health@8f5964ac, health_checks/dmesg_whitelist.py
//      WHITELISTED_NVSWITCH_SXID_ERRORS (the single-bit ECC SXids and 22013, "known to be
//      harmless", citing [F] D.4); health_checks.py fails the node on every other SXid.
// Severity policy (issue #39): a line that says "Fatal" drains (fail), whatever the number ([F];
// [G] Fatal; [I] fails). A non-fatal line: a drain for the SXids after which [F] says NVLink
// traffic stalls and CUDA jobs abort (11004, 12028, 19084: [G] Fatal, [I] fails); a warning for
// those that cost throughput (20001, 20009, 20012: [G] Warning, [I] fails); a note for what the
// hardware corrected or [F] says to ignore (single-bit ECC, 22013: [G] Warning, [I] whitelists).
#include <algorithm>

#include "probes/kernel_log/sxid.h"

namespace fabkit::probes {
namespace {

using C = SxidClass;

constexpr const char* kFatalMeaning =
    "a fatal NVSwitch error: the GPU partitions using the port fail, and the host (or the "
    "NVSwitches and GPUs) must be reset to recover (NVIDIA's Fabric Manager guide, fatal SXids; "
    "gpud: Fatal; imbue fails on it)";
constexpr const char* kStallMeaning =
    "NVLink traffic of the GPUs on this port stalls and later GPU accesses hang; the driver aborts "
    "their CUDA jobs with Xid 45 (NVIDIA's Fabric Manager guide; gpud: Fatal; imbue fails on it)";
constexpr const char* kSbeMeaning =
    "a single-bit ECC error the NVSwitch corrected: no impact (NVIDIA's Fabric Manager guide; "
    "imbue lists it as harmless; gpud keeps the node healthy)";

const SxidInfo kTable[] = {
    {11012, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {11021, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {11022, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {11023, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {12021, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {12023, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {15008, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {15011, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {19049, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {19055, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {19057, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {19059, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {19062, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {19065, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {19068, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {19071, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {24001, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {24002, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {24003, "Single bit ECC errors", kSbeMeaning, C::kInformational},
    {22013, "Minion Link DLREQ interrupt",
     "can be safely ignored (NVIDIA's Fabric Manager guide; imbue lists it as harmless; gpud keeps "
     "the node healthy); drivers print it for every link at boot",
     C::kInformational},
    {11004, "Ingress invalid ACL",
     "an NVLink packet hit an invalid routing entry, which only a wrong Fabric Manager partition "
     "configuration causes; then the GPUs' NVLink traffic stalls (NVIDIA's Fabric Manager "
     "guide; gpud: Fatal; imbue fails on it)",
     C::kDrain},
    {12028, "egress non-posted PRIV error", kStallMeaning, C::kDrain},
    {19084, "AN1 Heartbeat Timeout Error", kStallMeaning, C::kDrain},
    {20001, "TX Replay Error",
     "NVLink packets had to be retransmitted: the port's throughput may drop (NVIDIA's Fabric "
     "Manager guide; gpud: Warning; imbue fails on it)",
     C::kDegraded},
    {20009, "RX Short Error Rate",
     "a non-fatal link error rate on the port (gpud: Warning, from the driver's "
     "NVSWITCH_ERR_HW_DLPL_RX_SHORT_ERROR_RATE; imbue fails on it)",
     C::kDegraded},
    {20012, "Broken/inconsistent connection",
     "a link's connection is broken or inconsistent with the fabric's (NVIDIA's Fabric Manager "
     "guide; gpud: Warning; imbue fails on it)",
     C::kDegraded},
    {11001, "ingress invalid command", kFatalMeaning, C::kDrain},
    {11009, "ingress invalid VCSet", kFatalMeaning, C::kDrain},
    {11013, "ingress header DBE", kFatalMeaning, C::kDrain},
    {11018, "ingress RID DBE", kFatalMeaning, C::kDrain},
    {11019, "ingress RLAN DBE", kFatalMeaning, C::kDrain},
    {11020, "ingress control parity", kFatalMeaning, C::kDrain},
    {12001, "egress crossbar overflow", kFatalMeaning, C::kDrain},
    {12002, "egress packet route", kFatalMeaning, C::kDrain},
    {12020, "egress sequence ID error", kFatalMeaning, C::kDrain},
    {12022, "egress input ECC DBE error", kFatalMeaning, C::kDrain},
    {12024, "egress output ECC DBE error", kFatalMeaning, C::kDrain},
    {12025, "egress credit overflow", kFatalMeaning, C::kDrain},
    {12026, "egress destination request ID error", kFatalMeaning, C::kDrain},
    {12027, "egress destination response ID error", kFatalMeaning, C::kDrain},
    {12030, "egress control parity error", kFatalMeaning, C::kDrain},
    {12031, "egress credit parity error", kFatalMeaning, C::kDrain},
    {12032, "egress flit type mismatch", kFatalMeaning, C::kDrain},
    {14017, "TS ATO timeout", kFatalMeaning, C::kDrain},
    {15001, "route buffer over/underflow", kFatalMeaning, C::kDrain},
    {15006, "route transdone over/underflow", kFatalMeaning, C::kDrain},
    {15009, "route GLT DBE", kFatalMeaning, C::kDrain},
    {15010, "route parity", kFatalMeaning, C::kDrain},
    {15012, "route incoming DBE", kFatalMeaning, C::kDrain},
    {15013, "route credit parity", kFatalMeaning, C::kDrain},
    {19047, "NCISOC HDR ECC DBE Error", kFatalMeaning, C::kDrain},
    {19048, "NCISOC DAT ECC DBE Error", kFatalMeaning, C::kDrain},
    {19054, "HDR RAM ECC DBE Error", kFatalMeaning, C::kDrain},
    {19056, "DAT0 RAM ECC DBE Error", kFatalMeaning, C::kDrain},
    {19058, "DAT1 RAM ECC DBE Error", kFatalMeaning, C::kDrain},
    {19060, "CREQ RAM HDR ECC DBE Error", kFatalMeaning, C::kDrain},
    {19061, "CREQ RAM DAT ECC DBE Error", kFatalMeaning, C::kDrain},
    {19063, "Response RAM HDR ECC DBE Error", kFatalMeaning, C::kDrain},
    {19064, "Response RAM DAT ECC DBE Error", kFatalMeaning, C::kDrain},
    {19066, "COM RAM HDR ECC DBE Error", kFatalMeaning, C::kDrain},
    {19067, "COM RAM DAT ECC DBE Error", kFatalMeaning, C::kDrain},
    {19069, "RSP1 RAM HDR ECC DBE Error", kFatalMeaning, C::kDrain},
    {19070, "RSP1 RAM DAT ECC DBE Error", kFatalMeaning, C::kDrain},
    {20034, "LTSSM Fault Up", kFatalMeaning, C::kDrain},
    {22003, "Minion Halt", kFatalMeaning, C::kDrain},
    {22011, "Minion exterror", kFatalMeaning, C::kDrain},
    {22012, "Minion Link NA interrupt", kFatalMeaning, C::kDrain},
    {23001, "ingress SRC-VC buffer overflow", kFatalMeaning, C::kDrain},
    {23002, "ingress SRC-VC buffer underflow", kFatalMeaning, C::kDrain},
    {23003, "egress DST-VC credit overflow", kFatalMeaning, C::kDrain},
    {23004, "egress DST-VC credit underflow", kFatalMeaning, C::kDrain},
    {23005, "ingress packet burst error", kFatalMeaning, C::kDrain},
    {23006, "ingress packet sticky error", kFatalMeaning, C::kDrain},
    {23007, "possible bubbles at ingress", kFatalMeaning, C::kDrain},
    {23008, "ingress packet invalid dst error", kFatalMeaning, C::kDrain},
    {23009, "ingress packet parity error", kFatalMeaning, C::kDrain},
    {23010, "ingress SRC-VC buffer overflow", kFatalMeaning, C::kDrain},
    {23011, "ingress SRC-VC buffer underflow", kFatalMeaning, C::kDrain},
    {23012, "egress DST-VC credit overflow", kFatalMeaning, C::kDrain},
    {23013, "egress DST-VC credit underflow", kFatalMeaning, C::kDrain},
    {23014, "ingress packet burst error", kFatalMeaning, C::kDrain},
    {23015, "ingress packet sticky error", kFatalMeaning, C::kDrain},
    {23016, "possible bubbles at ingress", kFatalMeaning, C::kDrain},
    {23017, "ingress credit parity error", kFatalMeaning, C::kDrain},
    {24004, "sourcetrack TCEN0 crumbstore DBE", kFatalMeaning, C::kDrain},
    {24005, "sourcetrack TCEN0 TD crumbstore DBE", kFatalMeaning, C::kDrain},
    {24006, "sourcetrack TCEN1 crumbstore DBE", kFatalMeaning, C::kDrain},
    {24007, "sourcetrack timeout error", kFatalMeaning, C::kDrain},
};

}  // namespace

const char* to_string(SxidClass c) {
  switch (c) {
    case SxidClass::kDrain:
      return "drain";
    case SxidClass::kDegraded:
      return "degraded";
    case SxidClass::kInformational:
      return "informational";
  }
  return "degraded";
}

const SxidInfo* find_sxid(int sxid) {
  auto it = std::find_if(std::begin(kTable), std::end(kTable),
                         [&](const SxidInfo& x) { return x.sxid == sxid; });
  return it == std::end(kTable) ? nullptr : &*it;
}

}  // namespace fabkit::probes
