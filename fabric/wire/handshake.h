// Mutual authentication of every fabkit connection (control and data) without the session token
// ever crossing the wire: a challenge-response with a fresh nonce from each side and an
// HMAC-SHA256 over both nonces, both roles, the purpose and a protocol label (OpenSSL; proofs are
// compared with CRYPTO_memcmp), keyed by session_key(token) (session_key.h: a generated token as
// is, a passphrase through scrypt).
//
// The client proves itself first. A listener is open to anyone on the network, so the server
// says nothing derived from the token until the client has proved it: an unauthenticated client
// gets one random nonce and, for a wrong proof, an error frame, both the same whatever the token
// is, so nothing it could test token guesses against. The client's proof goes only to a process
// it chose to connect to (an address its controller vouched for); a generated token makes that
// proof useless to a guesser (256 random bits), a passphrase costs one scrypt per guess.
//
//   client -> server  hello  {"protocol", "role", "purpose", "nonce"}
//   server -> client  hello  {"protocol", "role", "nonce"}                nothing from the token
//   client -> server  auth   {"proof", "info"}                           proof = HMAC(client, ...)
//   server -> client  auth   {"proof", "info"}  the welcome              proof = HMAC(server, ...)
//                     (or an error frame: wire.bad_token, or the caller's own, and no proof)
//
// The steps are pure state machines over frames (ClientHandshake, ServerHandshake) so the fuzz
// target drives them with arbitrary bytes; client_handshake / server_handshake run them on a
// socket under one absolute deadline.
#pragma once

#include <array>
#include <functional>
#include <string>

#include "common/json.h"
#include "fabric/wire/frame.h"
#include "fabric/wire/socket_io.h"

namespace fabkit::wire {

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kProofBytes = 32;  // HMAC-SHA256
// Handshake frames are tiny; an unauthenticated peer may make us buffer no more than this.
inline constexpr uint32_t kMaxHandshakeFrameBytes = 4096;
using Nonce = std::array<unsigned char, kNonceBytes>;

Nonce random_nonce();  // OpenSSL RAND_bytes; throws WireError kIo when the generator fails

// HMAC-SHA256 keyed by session_key(token) over (label, direction, client role, server role,
// purpose, both nonces), each length-prefixed so no two inputs serialise alike. direction:
// "client" | "server".
std::string session_proof(const std::string& token, const std::string& direction,
                          const std::string& client_role, const std::string& server_role,
                          const std::string& purpose, const Nonce& client_nonce,
                          const Nonce& server_nonce);
// Constant-time comparison (CRYPTO_memcmp); false when the sizes differ.
bool proofs_equal(const std::string& a, const std::string& b);

// Roles are short lowercase words ("controller", "agent", "peer"); purposes name what the
// connection is for ("control", "tcp_ping", "tcp_sink", "rdma_rc", "allreduce", ...).
bool is_handshake_word(const std::string& s);

struct PeerClaims {
  std::string role;
  std::string purpose;
  Json info = Json::object();
  // The server's own proof for this handshake, made only once the client's proof verified; it
  // travels in the welcome (welcome_frame). Raw bytes.
  std::string server_proof;
};

class ClientHandshake {
 public:
  ClientHandshake(std::string token, std::string role, std::string purpose, Json info,
                  const Nonce& nonce);
  Frame challenge() const;  // the first frame
  // Checks the server's hello (protocol, role, nonce); returns the client's proof frame. Throws
  // WireError: kVersionMismatch, kBadMessage, or the named error a server sent instead.
  Frame on_reply(const Frame& f);
  // The server's last frame: its proof and info after it accepted ours. A wrong or missing proof
  // is kImpostor (the server cannot prove the token); an error frame is thrown as the WireError
  // it names (kBadToken when our proof was refused; kRejected for a caller's own).
  Json on_welcome(const Frame& f) const;
  const std::string& server_role() const { return server_role_; }

 private:
  std::string token_, role_, purpose_, server_role_;
  Json info_;
  Nonce nonce_, server_nonce_{};
  bool replied_ = false;
};

class ServerHandshake {
 public:
  // purpose_ok decides which purposes this listener serves (e.g. only "control").
  ServerHandshake(std::string token, std::string role, const Nonce& nonce,
                  std::function<bool(const std::string& purpose)> purpose_ok);
  // Checks the client's hello; returns our nonce (nothing that depends on the token). Throws
  // kVersionMismatch, kBadMessage.
  Frame on_challenge(const Frame& f);
  // Checks the client's proof; throws kBadToken when it is wrong. The caller then sends
  // welcome_frame(claims, info), which carries our proof, or an error frame of its own (e.g. a
  // plan mismatch).
  PeerClaims on_proof(const Frame& f);

 private:
  std::string token_, role_;
  Nonce nonce_, client_nonce_{};
  std::function<bool(const std::string&)> purpose_ok_;
  PeerClaims claims_;
  bool challenged_ = false;
};

// The server's last frame: its proof (claims.server_proof, from on_proof) and its info.
Frame welcome_frame(const PeerClaims& claims, const Json& info);

// Blocking drivers, every read and write bounded by `deadline`. The client returns the server's
// welcome info; the server returns the client's claims and leaves the welcome to the caller.
// (Listeners run the server side through handshake_gate.h, many connections at once.)
Json client_handshake(int fd, const std::string& token, const std::string& role,
                      const std::string& purpose, const Json& info, Deadline deadline,
                      std::string* server_role = nullptr);
PeerClaims server_handshake(int fd, const std::string& token, const std::string& role,
                            const std::function<bool(const std::string&)>& purpose_ok,
                            Deadline deadline);
// Best effort: an error frame {code, message} within 1 s, for a peer that may already be gone.
void send_error_frame(int fd, const std::string& code, const std::string& message);

}  // namespace fabkit::wire
