// libFuzzer target: the session handshake (fabric/wire/handshake.h) fed arbitrary frames, as an
// agent's accept side and a controller's connect side meet them from the network. The first byte
// picks the side: 0 drives a server with the input's frames, 1 a client, 2 runs an honest
// exchange and flips the input's bytes into the client's proof frame in transit. Invariants: only
// WireError escapes; a server never accepts a proof it did not get from a token holder (mode 2:
// a changed proof field must be refused); a client never accepts a welcome whose proof did not
// come from a token holder; and what a server says before the client proved itself is the same
// whatever the token (so an unauthenticated client learns nothing to test guesses against).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "common/json_read.h"
#include "fabric/wire/frame.h"
#include "fabric/wire/handshake.h"
#include "fabric/wire/messages.h"
#include "fabric/wire/wire_error.h"

namespace {

using namespace fabkit::wire;

const std::string kToken(64, 'a');
const std::string kOtherToken(64, 'b');

Nonce fixed_nonce(unsigned char v) {
  Nonce n;
  n.fill(v);
  return n;
}

std::vector<Frame> frames_of(const uint8_t* data, size_t size) {
  std::vector<Frame> out;
  FrameDecoder d(kMaxHandshakeFrameBytes);
  try {
    d.feed(reinterpret_cast<const char*>(data), size);
    while (auto f = d.next()) out.push_back(*f);
  } catch (const WireError&) {
  }
  return out;
}

// What a server does with a frame before any proof: its reply bytes, or the error it names.
std::string first_answer(const std::string& token, const Frame& f) {
  ServerHandshake s(token, "agent", fixed_nonce(2),
                    [](const std::string& p) { return p == "control"; });
  try {
    return encode_frame(s.on_challenge(f));
  } catch (const WireError& e) {
    return std::string("error: ") + e.what();
  }
}

void drive_server(const std::vector<Frame>& frames) {
  if (!frames.empty() && first_answer(kToken, frames[0]) != first_answer(kOtherToken, frames[0]))
    std::abort();  // the unauthenticated reply depends on the token
  ServerHandshake s(kToken, "agent", fixed_nonce(2), [](const std::string& p) { return p == "control"; });
  size_t i = 0;
  try {
    if (i < frames.size()) s.on_challenge(frames[i++]);
    if (i < frames.size()) {
      s.on_proof(frames[i++]);
      std::abort();  // nobody without the token can produce the client proof for nonce 0x02..
    }
  } catch (const WireError&) {
  }
}

void drive_client(const std::vector<Frame>& frames) {
  ClientHandshake c(kToken, "controller", "control", fabkit::Json::object(), fixed_nonce(1));
  c.challenge();
  size_t i = 0;
  try {
    if (i < frames.size()) c.on_reply(frames[i++]);  // a well-formed hello is accepted
    if (i < frames.size()) {
      c.on_welcome(frames[i++]);
      std::abort();  // a server proof for our nonce 0x01.. cannot come from the input
    }
  } catch (const WireError&) {
  }
}

void tamper_in_transit(const uint8_t* data, size_t size) {
  ClientHandshake c(kToken, "peer", "tcp_ping", fabkit::Json::object(), fixed_nonce(3));
  ServerHandshake s(kToken, "agent", fixed_nonce(4), [](const std::string&) { return true; });
  Frame proof = c.on_reply(s.on_challenge(c.challenge()));
  Frame changed = proof;
  for (size_t i = 0; i + 1 < size; i += 2)
    if (!changed.payload.empty()) changed.payload[data[i] % changed.payload.size()] ^= static_cast<char>(data[i + 1]);
  auto field = [](const Frame& f) {
    fabkit::Json j;
    try {
      j = fabkit::parse_json(f.payload, "proof frame");
    } catch (const fabkit::JsonReadError&) {
      return std::string();
    }
    return j.is_object() && j.contains("proof") && j["proof"].is_string() ? j["proof"].get<std::string>() : "";
  };
  try {
    s.on_proof(changed);
    if (field(changed) != field(proof)) std::abort();  // a changed proof was accepted
  } catch (const WireError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  switch (data[0] % 3) {
    case 0: drive_server(frames_of(data + 1, size - 1)); break;
    case 1: drive_client(frames_of(data + 1, size - 1)); break;
    default: tamper_in_transit(data + 1, size - 1); break;
  }
  return 0;
}
