#include "fabric/wire/handshake.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "common/hex.h"
#include "fabric/wire/messages.h"
#include "fabric/wire/session_key.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::wire {
namespace {

// Part of every proof: a proof made for another protocol (or version) never verifies here.
constexpr char kProofLabel[] = "fabkit session handshake v3";  // v3: the client proves first

[[noreturn]] void bad(const std::string& what) { throw WireError(WireErrorKind::kBadMessage, what); }

// Decoding stays strict (lowercase only, one encoding per value); common/hex.h decodes either case.
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is not produced by us; refusing it keeps one encoding per value
}

// A field of exactly n bytes, lowercase hex.
std::string get_hex(const Json& j, const char* field, size_t n) {
  std::string s = get_string(j, field, 2 * n);
  if (s.size() != 2 * n) bad(std::string("field '") + field + "' must be " + std::to_string(2 * n) + " hex digits");
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
    if (hi < 0 || lo < 0) bad(std::string("field '") + field + "' holds a character that is not lowercase hex");
    out[i] = static_cast<char>(hi << 4 | lo);
  }
  return out;
}

Nonce get_nonce(const Json& j) {
  std::string raw = get_hex(j, "nonce", kNonceBytes);
  Nonce n;
  std::copy(raw.begin(), raw.end(), n.begin());
  return n;
}

std::string get_word(const Json& j, const char* field) {
  std::string s = get_string(j, field, 32);
  if (!is_handshake_word(s)) bad(std::string("field '") + field + "' = '" + s + "' is not a lowercase word");
  return s;
}

void check_protocol(const Json& j) {
  int64_t p = get_int(j, "protocol", 0, 1 << 20);
  if (p != kProtocolVersion)
    throw WireError(WireErrorKind::kVersionMismatch,
                    "peer speaks protocol " + std::to_string(p) + ", this side " +
                        std::to_string(kProtocolVersion) + "; use the same fabcheck build on both ends");
}

Json get_info(const Json& j) {
  auto it = j.find("info");
  if (it == j.end()) return Json::object();
  if (!it->is_object()) bad("field 'info' must be an object");
  return *it;
}

void expect(const Frame& f, FrameType t) {
  if (f.type != t)
    bad(std::string("handshake expected a ") + to_string(t) + " frame, got " + to_string(f.type));
}

// An error frame received during the handshake becomes the WireError it names.
[[noreturn]] void throw_peer_error(const Frame& f) {
  ErrorMessage e = parse_error(f);
  for (auto k : {WireErrorKind::kBadToken, WireErrorKind::kVersionMismatch, WireErrorKind::kOversized,
                 WireErrorKind::kBadType, WireErrorKind::kMalformedJson, WireErrorKind::kBadMessage,
                 WireErrorKind::kTimeout})
    if (e.code == to_string(k)) throw WireError(k, "the peer refused the handshake: " + e.message);
  throw WireError(WireErrorKind::kRejected, e.code + ": " + e.message);
}

void put_field(std::string& out, const std::string& s) {
  uint32_t n = static_cast<uint32_t>(s.size());
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += s;
}

}  // namespace

Nonce random_nonce() {
  Nonce n;
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1)
    throw WireError(WireErrorKind::kIo, "RAND_bytes failed to produce a handshake nonce");
  return n;
}

std::string session_proof(const std::string& token, const std::string& direction,
                          const std::string& client_role, const std::string& server_role,
                          const std::string& purpose, const Nonce& client_nonce, const Nonce& server_nonce) {
  std::string msg;
  put_field(msg, kProofLabel);
  put_field(msg, direction);
  put_field(msg, client_role);
  put_field(msg, server_role);
  put_field(msg, purpose);
  put_field(msg, std::string(client_nonce.begin(), client_nonce.end()));
  put_field(msg, std::string(server_nonce.begin(), server_nonce.end()));
  const std::string key = session_key(token);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), mac, &len) == nullptr ||
      len != kProofBytes)
    throw WireError(WireErrorKind::kIo, "HMAC-SHA256 failed");
  return std::string(reinterpret_cast<char*>(mac), len);
}

bool proofs_equal(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool is_handshake_word(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

ClientHandshake::ClientHandshake(std::string token, std::string role, std::string purpose, Json info,
                                 const Nonce& nonce)
    : token_(std::move(token)), role_(std::move(role)), purpose_(std::move(purpose)), info_(std::move(info)),
      nonce_(nonce) {}

Frame ClientHandshake::challenge() const {
  Json j = {{"protocol", kProtocolVersion}, {"role", role_}, {"purpose", purpose_},
            {"nonce", hex_encode(nonce_.data(), nonce_.size())}};
  return Frame{FrameType::kHello, j.dump()};
}

Frame ClientHandshake::on_reply(const Frame& f) {
  if (replied_) bad("a second handshake reply");
  if (f.type == FrameType::kError) throw_peer_error(f);
  expect(f, FrameType::kHello);
  Json j = parse_json_payload(f);
  check_protocol(j);
  server_role_ = get_word(j, "role");
  server_nonce_ = get_nonce(j);
  if (server_nonce_ == nonce_) bad("the server echoed our nonce");  // a reflection, never a peer
  replied_ = true;
  std::string mine =
      session_proof(token_, "client", role_, server_role_, purpose_, nonce_, server_nonce_);
  Json a = {{"proof", hex_encode(mine.data(), mine.size())}, {"info", info_}};
  return Frame{FrameType::kAuth, a.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

Json ClientHandshake::on_welcome(const Frame& f) const {
  if (!replied_) bad("a welcome before the handshake reply");
  if (f.type == FrameType::kError) throw_peer_error(f);
  expect(f, FrameType::kAuth);
  Json j = parse_json_payload(f);
  std::string expected =
      session_proof(token_, "server", role_, server_role_, purpose_, nonce_, server_nonce_);
  std::string proof;
  try {
    proof = get_hex(j, "proof", kProofBytes);
  } catch (const WireError&) {
    proof.clear();  // missing or malformed: no proof, which is what an impostor has
  }
  if (!proofs_equal(proof, expected))
    throw WireError(
        WireErrorKind::kImpostor,
        "the " + server_role_ +
            " we connected to accepted our proof but cannot prove the session "
            "token itself (a relay or a process that pretends); the token was not sent");
  return get_info(j);
}

ServerHandshake::ServerHandshake(std::string token, std::string role, const Nonce& nonce,
                                 std::function<bool(const std::string&)> purpose_ok)
    : token_(std::move(token)), role_(std::move(role)), nonce_(nonce), purpose_ok_(std::move(purpose_ok)) {}

Frame ServerHandshake::on_challenge(const Frame& f) {
  if (challenged_) bad("a second handshake hello");
  expect(f, FrameType::kHello);
  Json j = parse_json_payload(f);
  check_protocol(j);
  claims_.role = get_word(j, "role");
  claims_.purpose = get_word(j, "purpose");
  if (!purpose_ok_(claims_.purpose)) bad("this port does not serve '" + claims_.purpose + "' connections");
  client_nonce_ = get_nonce(j);
  if (client_nonce_ == nonce_) bad("the client sent our own nonce");
  challenged_ = true;
  // Our nonce only: whoever connected has proved nothing yet, so it gets nothing it could test
  // token guesses against. Our proof goes in the welcome, after theirs verified.
  Json r = {{"protocol", kProtocolVersion},
            {"role", role_},
            {"nonce", hex_encode(nonce_.data(), nonce_.size())}};
  return Frame{FrameType::kHello, r.dump()};
}

PeerClaims ServerHandshake::on_proof(const Frame& f) {
  if (!challenged_) bad("a handshake proof before the hello");
  if (f.type == FrameType::kError) throw_peer_error(f);
  expect(f, FrameType::kAuth);
  Json j = parse_json_payload(f);
  std::string proof = get_hex(j, "proof", kProofBytes);
  std::string expected = session_proof(token_, "client", claims_.role, role_, claims_.purpose, client_nonce_, nonce_);
  if (!proofs_equal(proof, expected))
    throw WireError(WireErrorKind::kBadToken, "wrong session token: the " + claims_.role + " could not prove it");
  challenged_ = false;  // one proof per handshake
  claims_.info = get_info(j);
  claims_.server_proof =
      session_proof(token_, "server", claims_.role, role_, claims_.purpose, client_nonce_, nonce_);
  return claims_;
}

Frame welcome_frame(const PeerClaims& claims, const Json& info) {
  Json w = {{"proof", hex_encode(claims.server_proof.data(), claims.server_proof.size())},
            {"info", info}};
  return Frame{FrameType::kAuth, w.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

Json client_handshake(int fd, const std::string& token, const std::string& role, const std::string& purpose,
                      const Json& info, Deadline deadline, std::string* server_role) {
  ClientHandshake h(token, role, purpose, info, random_nonce());
  write_frame(fd, h.challenge(), deadline);
  write_frame(fd, h.on_reply(read_frame(fd, deadline, kMaxHandshakeFrameBytes)), deadline);
  Json welcome = h.on_welcome(read_frame(fd, deadline, kMaxHandshakeFrameBytes));
  if (server_role) *server_role = h.server_role();
  return welcome;
}

PeerClaims server_handshake(int fd, const std::string& token, const std::string& role,
                            const std::function<bool(const std::string&)>& purpose_ok, Deadline deadline) {
  ServerHandshake h(token, role, random_nonce(), purpose_ok);
  try {
    write_frame(fd, h.on_challenge(read_frame(fd, deadline, kMaxHandshakeFrameBytes)), deadline);
    return h.on_proof(read_frame(fd, deadline, kMaxHandshakeFrameBytes));
  } catch (const WireError& e) {
    // Tell the client why, by name, unless the connection itself is what failed.
    if (e.kind() != WireErrorKind::kClosed && e.kind() != WireErrorKind::kIo &&
        e.kind() != WireErrorKind::kTruncated)
      send_error_frame(fd, to_string(e.kind()), e.what());
    throw;
  }
}

void send_error_frame(int fd, const std::string& code, const std::string& message) {
  try {
    write_frame(fd, make_frame(ErrorMessage{code, message}), deadline_in_ms(1000));
  } catch (const WireError&) {
  }
}

}  // namespace fabkit::wire
