// The session handshake as pure steps: the honest exchange, and every way it must refuse (wrong
// token on either side, a tampered proof, a reflected nonce, a purpose the server does not serve,
// another protocol, malformed fields), each with its named error; that the server says nothing
// derived from the token before the client proved it; the session key (a generated token as is,
// a passphrase through scrypt) and the token floor; and the absolute deadline of the socket layer
// against a peer that trickles bytes.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <set>
#include <thread>

#include "common/hex.h"
#include "fabric/allreduce/allreduce_types.h"
#include "fabric/allreduce/session_socket.h"
#include "fabric/wire/handshake.h"
#include "fabric/wire/messages.h"
#include "fabric/wire/session_key.h"
#include "fabric/wire/socket_io.h"
#include "fabric/wire/token.h"
#include "fabric/wire/wire_error.h"
#include "tests/unit/wire/wire_error_kind.h"

namespace fabkit::wire {
namespace {

using namespace std::chrono_literals;

const std::string kToken = std::string(64, 'a');
auto any_purpose = [](const std::string&) { return true; };

TEST(Handshake, HonestPeersAgreeAndNeitherFrameCarriesTheToken) {
  ClientHandshake c(kToken, "controller", "control", {{"x", 1}}, random_nonce());
  ServerHandshake s(kToken, "agent", random_nonce(), any_purpose);
  Frame hello = c.challenge();
  Frame reply = s.on_challenge(hello);
  Frame proof = c.on_reply(reply);
  PeerClaims claims = s.on_proof(proof);
  EXPECT_EQ(claims.role, "controller");
  EXPECT_EQ(claims.purpose, "control");
  EXPECT_EQ(claims.info["x"], 1);
  Frame welcome = welcome_frame(claims, {{"name", "b"}});
  EXPECT_EQ(c.on_welcome(welcome)["name"], "b");
  EXPECT_EQ(c.server_role(), "agent");
  for (const Frame* f : {&hello, &reply, &proof, &welcome})
    EXPECT_EQ(f->payload.find(kToken), std::string::npos);
}

// The issue's attack: any client could connect and get the server's HMAC, then test token guesses
// against it offline. Now the server's answers before the client's proof are the same bytes
// whatever the token: a server holding another token, given the same nonce, says exactly the same.
TEST(Handshake, TheServerRevealsNothingDerivedFromTheTokenToAnUnauthenticatedClient) {
  Nonce server_nonce = random_nonce();
  ClientHandshake guesser(std::string(64, 'b'), "controller", "control", Json::object(),
                          random_nonce());
  Frame hello = guesser.challenge();
  ServerHandshake real(kToken, "agent", server_nonce, any_purpose);
  ServerHandshake other(std::string(64, 'c'), "agent", server_nonce, any_purpose);
  Frame reply = real.on_challenge(hello);
  EXPECT_EQ(encode_frame(reply), encode_frame(other.on_challenge(hello)));
  Json j = Json::parse(reply.payload);
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.insert(it.key());
  EXPECT_EQ(keys, (std::set<std::string>{"nonce", "protocol", "role"})) << reply.payload;
  // The guesser's (wrong) proof is refused with the same words by both.
  Frame proof = guesser.on_reply(reply);
  std::string refused_real, refused_other;
  try {
    real.on_proof(proof);
  } catch (const WireError& e) {
    EXPECT_EQ(e.kind(), WireErrorKind::kBadToken);
    refused_real = e.what();
  }
  try {
    other.on_proof(proof);
  } catch (const WireError& e) {
    refused_other = e.what();
  }
  EXPECT_FALSE(refused_real.empty());
  EXPECT_EQ(refused_real, refused_other);
}

TEST(Handshake, AServerWithoutTheTokenRefusesOurProofAndCannotForgeAWelcome) {
  ClientHandshake c(kToken, "controller", "control", Json::object(), random_nonce());
  ServerHandshake impostor(std::string(64, 'b'), "agent", random_nonce(), any_purpose);
  Frame proof = c.on_reply(impostor.on_challenge(c.challenge()));
  EXPECT_EQ(kind_of([&] { impostor.on_proof(proof); }), WireErrorKind::kBadToken);
  // A welcome it makes up (no proof, a made-up one, or a proof for another token) is an impostor's.
  EXPECT_EQ(kind_of([&] {
              c.on_welcome(Frame{FrameType::kAuth, R"({"info":{}})"});
            }),
            WireErrorKind::kImpostor);
  Json made_up = {{"proof", std::string(64, '0')}, {"info", Json::object()}};
  EXPECT_EQ(kind_of([&] {
              c.on_welcome(Frame{FrameType::kAuth, made_up.dump()});
            }),
            WireErrorKind::kImpostor);
  PeerClaims forged;
  forged.server_proof = std::string(kProofBytes, 'x');
  EXPECT_EQ(kind_of([&] { c.on_welcome(welcome_frame(forged, {})); }), WireErrorKind::kImpostor);
}

TEST(Handshake, AClientWithoutTheTokenIsRefusedAsBadToken) {
  ClientHandshake c(std::string(64, 'b'), "peer", "tcp_ping", Json::object(), random_nonce());
  ServerHandshake s(kToken, "agent", random_nonce(), any_purpose);
  Frame proof = c.on_reply(s.on_challenge(c.challenge()));
  EXPECT_EQ(kind_of([&] { s.on_proof(proof); }), WireErrorKind::kBadToken);
  ServerHandshake s2(kToken, "agent", random_nonce(), any_purpose);
  s2.on_challenge(c.challenge());
  Json forged = {{"proof", std::string(64, '0')}};
  EXPECT_EQ(kind_of([&] {
              s2.on_proof(Frame{FrameType::kAuth, forged.dump()});
            }),
            WireErrorKind::kBadToken);
}

TEST(Handshake, ProofsAreBoundToDirectionRolesPurposeAndNonces) {
  Nonce a = random_nonce(), b = random_nonce();
  std::string p = session_proof(kToken, "client", "peer", "agent", "tcp_ping", a, b);
  EXPECT_EQ(p.size(), kProofBytes);
  EXPECT_EQ(p, session_proof(kToken, "client", "peer", "agent", "tcp_ping", a, b));
  EXPECT_NE(p,
            session_proof(kToken, "server", "peer", "agent", "tcp_ping", a, b));  // no reflection
  EXPECT_NE(p, session_proof(kToken, "client", "controller", "agent", "tcp_ping", a, b));
  EXPECT_NE(p, session_proof(kToken, "client", "peer", "agent", "tcp_sink", a, b));
  EXPECT_NE(p, session_proof(kToken, "client", "peer", "agent", "tcp_ping", b, a));
  EXPECT_NE(p, session_proof(std::string(64, 'b'), "client", "peer", "agent", "tcp_ping", a, b));
  EXPECT_NE(
      p, session_proof(kToken + "x", "client", "peer", "agent", "tcp_ping", a, b));  // a passphrase
  EXPECT_TRUE(proofs_equal(p, p));
  EXPECT_FALSE(proofs_equal(p, p.substr(1)));
}

TEST(Handshake, ReflectedNoncesAndUnservedPurposesAreRefused) {
  Nonce n = random_nonce();
  ServerHandshake s(kToken, "agent", n, [](const std::string& p) { return p == "control"; });
  ClientHandshake echo(kToken, "controller", "control", Json::object(), n);
  EXPECT_EQ(kind_of([&] { s.on_challenge(echo.challenge()); }), WireErrorKind::kBadMessage);
  ServerHandshake s2(kToken, "agent", random_nonce(),
                     [](const std::string& p) { return p == "control"; });
  ClientHandshake other(kToken, "peer", "tcp_sink", Json::object(), random_nonce());
  EXPECT_EQ(kind_of([&] { s2.on_challenge(other.challenge()); }), WireErrorKind::kBadMessage);
}

TEST(Handshake, MalformedAndOutOfOrderFramesHaveNamedErrors) {
  ServerHandshake s(kToken, "agent", random_nonce(), any_purpose);
  auto hello = [](const Json& j) { return Frame{FrameType::kHello, j.dump()}; };
  Json good = {{"protocol", kProtocolVersion},
               {"role", "peer"},
               {"purpose", "x"},
               {"nonce", std::string(64, 'c')}};
  EXPECT_EQ(kind_of([&] {
              s.on_proof(Frame{FrameType::kAuth, "{}"});
            }),
            WireErrorKind::kBadMessage);
  EXPECT_EQ(kind_of([&] {
              s.on_challenge(Frame{FrameType::kRequest, good.dump()});
            }),
            WireErrorKind::kBadMessage);
  EXPECT_EQ(kind_of([&] {
              s.on_challenge(Frame{FrameType::kHello, "not json"});
            }),
            WireErrorKind::kMalformedJson);
  Json j = good;
  j["protocol"] = kProtocolVersion - 1;
  EXPECT_EQ(kind_of([&] { s.on_challenge(hello(j)); }), WireErrorKind::kVersionMismatch);
  j = good;
  j["nonce"] = std::string(63, 'c');  // short
  EXPECT_EQ(kind_of([&] { s.on_challenge(hello(j)); }), WireErrorKind::kBadMessage);
  j["nonce"] = std::string(64, 'C');  // upper case: one encoding per value
  EXPECT_EQ(kind_of([&] { s.on_challenge(hello(j)); }), WireErrorKind::kBadMessage);
  j = good;
  j["role"] = "Peer; rm";
  EXPECT_EQ(kind_of([&] { s.on_challenge(hello(j)); }), WireErrorKind::kBadMessage);
  j = good;
  j["purpose"] = std::string(33, 'p');
  EXPECT_EQ(kind_of([&] { s.on_challenge(hello(j)); }), WireErrorKind::kBadMessage);
  // A client hearing an error frame instead of a reply gets the error it names.
  ClientHandshake c(kToken, "peer", "x", Json::object(), random_nonce());
  EXPECT_EQ(kind_of([&] {
              c.on_reply(make_frame(ErrorMessage{"wire.bad_token", "no"}));
            }),
            WireErrorKind::kBadToken);
  EXPECT_EQ(kind_of([&] {
              c.on_reply(make_frame(ErrorMessage{"plan_mismatch", "no"}));
            }),
            WireErrorKind::kRejected);
}

TEST(Handshake, RunsOverASocketPair) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Fd a(sv[0]), b(sv[1]);
  PeerClaims got;
  std::thread server([&] {
    got = server_handshake(b.get(), kToken, "agent", any_purpose, deadline_in_ms(2000));
    write_frame(b.get(), welcome_frame(got, {{"ok", true}}), deadline_in_ms(2000));
  });
  std::string role;
  Json w = client_handshake(a.get(), kToken, "peer", "tcp_sink", {{"n", 2}}, deadline_in_ms(2000),
                            &role);
  server.join();
  EXPECT_EQ(w["ok"], true);
  EXPECT_EQ(role, "agent");
  EXPECT_EQ(got.purpose, "tcp_sink");
  EXPECT_EQ(got.info["n"], 2);
}

TEST(SessionKey, AGeneratedTokenIsItsOwnKeyAndAPassphraseGoesThroughScrypt) {
  const std::string generated = generate_token();
  EXPECT_TRUE(is_generated_token_form(generated));
  auto t0 = Clock::now();
  std::string k = session_key(generated);
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count(), 20);
  ASSERT_EQ(k.size(), kSessionKeyBytes);
  EXPECT_EQ(hex_encode(k.data(), k.size()), generated);
  // A passphrase: the same key every time (both sides derive it alone), not the bytes themselves,
  // and computed once per process.
  const std::string passphrase = "this-is-a-long-enough-pass-phrase";
  EXPECT_FALSE(is_generated_token_form(passphrase));
  EXPECT_FALSE(is_generated_token_form(std::string(64, 'A')));  // upper case is not the form
  std::string p1 = session_key(passphrase);
  t0 = Clock::now();
  std::string p2 = session_key(passphrase);
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count(), 20);
  EXPECT_EQ(p1, p2);
  EXPECT_EQ(p1.size(), kSessionKeyBytes);
  EXPECT_NE(p1, session_key(passphrase + "!"));
}

// What one offline guess costs against a passphrase token: a whole scrypt derivation.
TEST(SessionKey, EachPassphraseGuessCostsOneScrypt) {
  auto t0 = Clock::now();
  (void)session_key("guess-number-one-of-many-candidates");
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  EXPECT_GE(ms, 20) << "scrypt N=2^16 r=8 took " << ms << " ms";
}

TEST(Token, WeakTokensAreRefusedWithTheReason) {
  EXPECT_EQ(token_problem(generate_token()), "");
  EXPECT_EQ(token_problem("correct-Horse-battery-staple-42"), "");  // a passphrase above the floor
  EXPECT_NE(token_problem("short").find("at least 16"), std::string::npos);
  // A passphrase like the one that fell to three guesses: too short for one that is not 64 hex.
  EXPECT_NE(token_problem("fabkit-cluster-secret").find("at least 24"), std::string::npos);
  EXPECT_NE(token_problem("aaaaaaaaaabbbbbbbbbbcccccccccc").find("different characters"),
            std::string::npos);
  EXPECT_NE(token_problem("abcdefghijkabcdefghijkabcdefghijk").find("repeated"), std::string::npos);
  // 64 hex digits that are visibly not random.
  EXPECT_NE(token_problem(std::string(64, 'a')).find("not random"), std::string::npos);
  EXPECT_NE(
      token_problem(std::string("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"))
          .find("repeated"),
      std::string::npos);
  EXPECT_NE(token_problem("has a space in the token, which is not allowed").find("space"),
            std::string::npos);
}

// A peer that sends one byte every 20 ms makes progress forever; an absolute deadline still ends
// the wait on time (a per-poll timeout would be re-armed by every byte and never fire).
TEST(SocketIo, ATricklingPeerTimesOutAtTheAbsoluteDeadline) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Fd a(sv[0]), b(sv[1]);
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    std::string frame = encode_frame({FrameType::kHello, std::string(200, 'x')});
    for (size_t i = 0; i < frame.size() && !stop; ++i) {
      if (::send(b.get(), &frame[i], 1, MSG_NOSIGNAL) != 1) break;
      std::this_thread::sleep_for(20ms);
    }
  });
  auto t0 = Clock::now();
  EXPECT_EQ(kind_of([&] { read_frame(a.get(), deadline_in_ms(300)); }), WireErrorKind::kTimeout);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  EXPECT_GE(ms, 290);
  EXPECT_LT(ms, 600);
  // The all-reduce runners' helper, timeout_ms for the whole call, behaves the same.
  char buf[64];
  t0 = Clock::now();
  try {
    fabric::recv_all(a.get(), buf, sizeof buf, 300, "reading a test message");
    ADD_FAILURE() << "recv_all returned";
  } catch (const fabric::PeerError& e) {
    EXPECT_EQ(e.kind(), "peer_timeout") << e.what();
  }
  ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  EXPECT_LT(ms, 600);
  stop = true;
  trickle.join();
}

}  // namespace
}  // namespace fabkit::wire
