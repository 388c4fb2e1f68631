#include "fabric/wire/wire_error.h"

namespace fabkit::wire {

const char* to_string(WireErrorKind k) {
  switch (k) {
    case WireErrorKind::kTruncated: return "wire.truncated";
    case WireErrorKind::kOversized: return "wire.oversized";
    case WireErrorKind::kBadType: return "wire.bad_type";
    case WireErrorKind::kMalformedJson: return "wire.malformed_json";
    case WireErrorKind::kBadMessage: return "wire.bad_message";
    case WireErrorKind::kTimeout: return "wire.timeout";
    case WireErrorKind::kClosed: return "wire.closed";
    case WireErrorKind::kBadToken: return "wire.bad_token";
    case WireErrorKind::kImpostor: return "wire.impostor";
    case WireErrorKind::kRejected: return "wire.rejected";
    case WireErrorKind::kVersionMismatch: return "wire.version_mismatch";
    case WireErrorKind::kIo: return "wire.io";
  }
  return "wire.unknown";
}

}  // namespace fabkit::wire
