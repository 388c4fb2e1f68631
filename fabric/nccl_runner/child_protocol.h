// The line protocol between run_nccl_allreduce and its fabcheck-nccl-runner child. The child
// writes on fd 3 (its stdout and stderr are NCCL's log), the parent answers on the child's stdin:
//   child:  READY <unique-id hex | ->   UNAVAILABLE <reason>   FAILED <kind> <reason>
//           PROGRESS <bytes>            RESULT <one-line JSON {"sizes":[...], "nccl_version": N,
//                                                     "device": {index, bus_id, chosen_by, reason}}>
//   parent: GO <unique-id hex>          STOP
// Pure parsing, so malformed lines from a broken child are tested without CUDA.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/hex.h"  // the id travels as hex_encode / hex_decode

namespace fabkit::fabric {

enum class ChildLineKind { kReady, kUnavailable, kFailed, kProgress, kResult, kGo, kStop, kInvalid };

struct ChildLine {
  ChildLineKind kind = ChildLineKind::kInvalid;
  std::string word;  // READY/GO: the id hex or "-"; FAILED: the kind
  std::string text;  // UNAVAILABLE/FAILED: reason; RESULT: the JSON; kInvalid: what was wrong
};

ChildLine parse_child_line(const std::string& line);

// ncclUniqueId is 128 bytes (NCCL_UNIQUE_ID_BYTES): 256 lowercase hex digits.
constexpr size_t kUniqueIdBytes = 128;
bool is_unique_id_hex(const std::string& s);

}  // namespace fabkit::fabric
