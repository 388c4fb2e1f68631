// Control-plane framing: [u32 big-endian payload length][u8 type][payload]. The length is checked
// against a cap before a single payload byte is buffered, so a hostile or confused peer cannot make
// us allocate gigabytes; payloads are JSON (messages.h) and are only ever parsed, never executed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fabkit::wire {

inline constexpr size_t kFrameHeaderBytes = 5;
// Control messages are small JSON documents; a node report is the largest (tens of KiB). 16 MiB
// leaves room for big hosts while bounding memory per connection.
inline constexpr uint32_t kMaxControlFrameBytes = 16u << 20;

enum class FrameType : uint8_t {
  kHello = 1,     // first frame each way: protocol version, role, nonce (handshake.h)
  kRequest = 2,   // {"id", "op", "args"}
  kResponse = 3,  // {"id", "ok", "result" | "error"}
  kError = 4,     // {"code", "message"}: the sender closes after it
  kBye = 5,       // orderly end of the session
  kAuth = 6,      // handshake proof (client -> server) and welcome (server -> client)
  // {"id", "done", "total"}: agent -> controller between a request and its response, only when
  // the request asked for it ("progress": true), so a controller that never asks never sees one.
  kProgress = 7,
  // {"id"}: agent -> controller once a second while a request runs (agent.h), so a controller
  // tells an agent that is alive but busy from one that stopped (SIGSTOP, a hung host) long
  // before the request's own bound.
  kHeartbeat = 8,
};
// The range of frame types, for the check and its message: a new type goes last in the enum and
// here, and both follow.
inline constexpr FrameType kFirstFrameType = FrameType::kHello;
inline constexpr FrameType kLastFrameType = FrameType::kHeartbeat;

bool is_known_frame_type(uint8_t t);
const char* to_string(FrameType t);

struct Frame {
  FrameType type = FrameType::kHello;
  std::string payload;
};

std::string encode_frame(const Frame& f);  // throws WireError kOversized past the cap

// Incremental decoder: feed bytes as they arrive, pop complete frames. Throws WireError
// (kOversized, kBadType) as soon as a header is seen to be bad; a stream that ends mid-frame is
// reported by finish() as kTruncated.
class FrameDecoder {
 public:
  explicit FrameDecoder(uint32_t max_payload_bytes = kMaxControlFrameBytes)
      : max_payload_bytes_(max_payload_bytes) {}
  void feed(const char* data, size_t n);
  std::optional<Frame> next();
  void finish() const;  // at end of stream: throws kTruncated when bytes of a frame are pending
  size_t buffered_bytes() const { return buffer_.size() - consumed_; }

 private:
  void check_header() const;
  uint32_t max_payload_bytes_;
  std::string buffer_;
  size_t consumed_ = 0;
};

// Header helpers shared with the blocking socket reader.
uint32_t decode_length(const unsigned char* header);
// Validates a 5-byte header; returns the payload length. Throws kOversized / kBadType.
uint32_t check_header(const unsigned char* header, uint32_t max_payload_bytes);

}  // namespace fabkit::wire
