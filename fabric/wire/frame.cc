#include "fabric/wire/frame.h"

#include "fabric/wire/wire_error.h"

namespace fabkit::wire {

bool is_known_frame_type(uint8_t t) {
  return t >= static_cast<uint8_t>(kFirstFrameType) && t <= static_cast<uint8_t>(kLastFrameType);
}

const char* to_string(FrameType t) {
  switch (t) {
    case FrameType::kHello: return "hello";
    case FrameType::kRequest: return "request";
    case FrameType::kResponse: return "response";
    case FrameType::kError: return "error";
    case FrameType::kBye: return "bye";
    case FrameType::kAuth: return "auth";
    case FrameType::kProgress: return "progress";
    case FrameType::kHeartbeat: return "heartbeat";
  }
  return "unknown";
}

uint32_t decode_length(const unsigned char* h) {
  return (uint32_t{h[0]} << 24) | (uint32_t{h[1]} << 16) | (uint32_t{h[2]} << 8) | uint32_t{h[3]};
}

uint32_t check_header(const unsigned char* h, uint32_t max_payload_bytes) {
  uint32_t len = decode_length(h);
  if (len > max_payload_bytes)
    throw WireError(WireErrorKind::kOversized, "frame announces " + std::to_string(len) +
                                                   " payload bytes; the cap is " +
                                                   std::to_string(max_payload_bytes));
  if (!is_known_frame_type(h[4]))
    throw WireError(WireErrorKind::kBadType,
                    "frame type byte " + std::to_string(h[4]) + " is not one of " +
                        std::to_string(static_cast<int>(kFirstFrameType)) + ".." +
                        std::to_string(static_cast<int>(kLastFrameType)) +
                        " (a peer of another fabkit version, or not a fabkit agent)");
  return len;
}

std::string encode_frame(const Frame& f) {
  if (f.payload.size() > kMaxControlFrameBytes)
    throw WireError(WireErrorKind::kOversized,
                    "refusing to send a " + std::to_string(f.payload.size()) + "-byte payload");
  uint32_t n = static_cast<uint32_t>(f.payload.size());
  std::string out;
  out.reserve(kFrameHeaderBytes + n);
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out.push_back(static_cast<char>(f.type));
  out += f.payload;
  return out;
}

void FrameDecoder::check_header() const {
  if (buffer_.size() - consumed_ >= kFrameHeaderBytes)
    wire::check_header(reinterpret_cast<const unsigned char*>(buffer_.data() + consumed_),
                       max_payload_bytes_);
}

void FrameDecoder::feed(const char* data, size_t n) {
  // Validate the pending header before buffering more, so an oversized announcement is rejected
  // after at most one read's worth of bytes.
  check_header();
  if (consumed_ > 0 && consumed_ == buffer_.size()) {
    buffer_.clear();
    consumed_ = 0;
  }
  buffer_.append(data, n);
  check_header();
}

std::optional<Frame> FrameDecoder::next() {
  size_t avail = buffer_.size() - consumed_;
  if (avail < kFrameHeaderBytes) return std::nullopt;
  auto* h = reinterpret_cast<const unsigned char*>(buffer_.data() + consumed_);
  uint32_t len = wire::check_header(h, max_payload_bytes_);
  if (avail < kFrameHeaderBytes + len) return std::nullopt;
  Frame f;
  f.type = static_cast<FrameType>(h[4]);
  f.payload.assign(buffer_, consumed_ + kFrameHeaderBytes, len);
  consumed_ += kFrameHeaderBytes + len;
  if (consumed_ > (1u << 20)) {  // compact now and then; frames are processed in order
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  return f;
}

void FrameDecoder::finish() const {
  size_t avail = buffer_.size() - consumed_;
  if (avail != 0)
    throw WireError(WireErrorKind::kTruncated, "stream ended with " + std::to_string(avail) +
                                                   " bytes of an incomplete frame");
}

}  // namespace fabkit::wire
