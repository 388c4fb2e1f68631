// Framing, messages and the session token: malformed, oversized and truncated input gives the
// named error, never a crash or an allocation of the announced size.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include "fabric/wire/frame.h"
#include "fabric/wire/messages.h"
#include "fabric/wire/socket_io.h"
#include "fabric/wire/token.h"
#include "fabric/wire/wire_error.h"
#include "tests/unit/wire/wire_error_kind.h"

namespace fabkit::wire {
namespace {

TEST(Frame, RoundTripsThroughTheDecoderByteByByte) {
  std::string bytes = encode_frame({FrameType::kRequest, R"({"id":1,"op":"facts"})"}) +
                      encode_frame({FrameType::kBye, "{}"});
  FrameDecoder d;
  std::vector<Frame> got;
  for (char c : bytes) {
    d.feed(&c, 1);
    while (auto f = d.next()) got.push_back(*f);
  }
  d.finish();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].type, FrameType::kRequest);
  EXPECT_EQ(parse_request(got[0]).op, "facts");
  EXPECT_EQ(got[1].type, FrameType::kBye);
}

TEST(Frame, HeaderIsBigEndianLengthThenType) {
  std::string b = encode_frame({FrameType::kHello, "abc"});
  ASSERT_EQ(b.size(), 8u);
  EXPECT_EQ(b.substr(0, 5), std::string("\0\0\0\3\1", 5));
}

TEST(Frame, OversizedAnnouncementIsRejectedFromTheHeaderAlone) {
  FrameDecoder d(1024);
  std::string h("\x00\x00\x04\x01\x02", 5);  // 1025 bytes announced, cap 1024
  EXPECT_EQ(kind_of([&] { d.feed(h.data(), h.size()); }), WireErrorKind::kOversized);
  std::string max("\xff\xff\xff\xff\x02", 5);
  FrameDecoder d2;
  EXPECT_EQ(kind_of([&] { d2.feed(max.data(), max.size()); }), WireErrorKind::kOversized);
  EXPECT_LE(d2.buffered_bytes(), 5u);
}

TEST(Frame, UnknownTypeAndTruncationAreNamed) {
  FrameDecoder d;
  std::string bad("\x00\x00\x00\x00\x09", 5);
  EXPECT_EQ(kind_of([&] { d.feed(bad.data(), bad.size()); }), WireErrorKind::kBadType);
  FrameDecoder t;
  std::string part = encode_frame({FrameType::kHello, "{\"a\":1}"}).substr(0, 7);
  t.feed(part.data(), part.size());
  EXPECT_FALSE(t.next().has_value());
  EXPECT_EQ(kind_of([&] { t.finish(); }), WireErrorKind::kTruncated);
}

// The message once said "1..7" after type 8 (heartbeat) was added: the range it names is the one
// the check uses, and every type inside it has a name.
TEST(Frame, UnknownTypeMessageNamesTheRangeTheDecoderAccepts) {
  for (int t = 0; t < 256; ++t) {
    const bool named = std::string(to_string(static_cast<FrameType>(t))) != "unknown";
    EXPECT_EQ(is_known_frame_type(static_cast<uint8_t>(t)), named) << "type " << t;
  }
  for (const char type : {'\x00', '\x09'}) {
    const std::string header = std::string("\x00\x00\x00\x00", 4) + type;
    try {
      check_header(reinterpret_cast<const unsigned char*>(header.data()), 1024);
      ADD_FAILURE() << "type " << int(type) << " accepted";
    } catch (const WireError& e) {
      EXPECT_NE(std::string(e.what()).find("is not one of 1..8"), std::string::npos) << e.what();
    }
  }
}

TEST(Messages, MalformedAndMistypedPayloadsNameTheProblem) {
  EXPECT_EQ(kind_of([] {
              parse_request({FrameType::kRequest, "{not json"});
            }),
            WireErrorKind::kMalformedJson);
  EXPECT_EQ(kind_of([] {
              parse_request({FrameType::kRequest, "[1,2]"});
            }),
            WireErrorKind::kBadMessage);
  EXPECT_EQ(kind_of([] {
              parse_request({FrameType::kRequest, R"({"id":"x","op":"facts"})"});
            }),
            WireErrorKind::kBadMessage);
  EXPECT_EQ(kind_of([] {
              parse_request({FrameType::kHello, R"({"id":1,"op":"facts"})"});
            }),
            WireErrorKind::kBadMessage);
  try {
    parse_request({FrameType::kRequest, R"({"id":1,"op":"facts","args":3})"});
    FAIL();
  } catch (const WireError& e) {
    EXPECT_NE(std::string(e.what()).find("'args'"), std::string::npos) << e.what();
  }
}

TEST(Messages, ArgumentAccessorsCheckRangesAndAddressLiterals) {
  Json a = {{"port", 70000}, {"addr", "example.com"}, {"ok", "198.18.0.1"}, {"neg", -1}};
  EXPECT_EQ(kind_of([&] { get_int(a, "port", 1, 65535); }), WireErrorKind::kBadMessage);
  EXPECT_EQ(kind_of([&] { get_ipv4(a, "addr"); }), WireErrorKind::kBadMessage);  // no DNS
  EXPECT_EQ(get_ipv4(a, "ok"), "198.18.0.1");
  EXPECT_EQ(kind_of([&] { get_int(a, "missing", 0, 1); }), WireErrorKind::kBadMessage);
  EXPECT_EQ(get_int_or(a, "missing", 0, 10, 7), 7);
  EXPECT_EQ(kind_of([&] { get_int_or(a, "neg", 0, 10, 7); }), WireErrorKind::kBadMessage);
}

TEST(Messages, ResponseRoundTrip) {
  Response r;
  r.id = 9;
  r.ok = false;
  r.error_code = "agent.bind_failed";
  r.error_message = "bind 198.18.0.1:0: Cannot assign requested address";
  Response back = parse_response(make_frame(r));
  EXPECT_EQ(back.id, 9u);
  EXPECT_FALSE(back.ok);
  EXPECT_EQ(back.error_code, "agent.bind_failed");
}

TEST(Messages, ProgressNoteRoundTripAndBounds) {
  ProgressNote n{7, 3, 26};
  Frame f = make_frame(n);
  EXPECT_EQ(f.type, FrameType::kProgress);
  ProgressNote back = parse_progress(f);
  EXPECT_EQ(7u, back.id);
  EXPECT_EQ(3u, back.done);
  EXPECT_EQ(26u, back.total);
  // done past total, a negative or absurd total, and a note of another type are named errors.
  auto note = [](const char* json) { return Frame{FrameType::kProgress, json}; };
  EXPECT_EQ(kind_of([&] { parse_progress(note(R"({"id":1,"done":5,"total":4})")); }),
            WireErrorKind::kBadMessage);
  EXPECT_EQ(kind_of([&] { parse_progress(note(R"({"id":1,"done":0,"total":-1})")); }),
            WireErrorKind::kBadMessage);
  EXPECT_EQ(kind_of([&] { parse_progress(note(R"({"id":1,"done":0,"total":2000000})")); }),
            WireErrorKind::kBadMessage);
  EXPECT_EQ(kind_of([&] { parse_progress(note("[]")); }), WireErrorKind::kBadMessage);
  EXPECT_EQ(kind_of([&] { parse_progress(make_frame(Response{})); }), WireErrorKind::kBadMessage);
  // Types 7 and 8 are known to the decoder (a progress note, a heartbeat), 9 is not.
  FrameDecoder d;
  std::string bytes = encode_frame(f) + encode_frame(make_frame(Heartbeat{7}));
  d.feed(bytes.data(), bytes.size());
  EXPECT_EQ(d.next()->type, FrameType::kProgress);
  Frame beat = *d.next();
  EXPECT_EQ(beat.type, FrameType::kHeartbeat);
  EXPECT_EQ(parse_heartbeat(beat).id, 7u);
  EXPECT_EQ(kind_of([&] { parse_heartbeat(f); }), WireErrorKind::kBadMessage);
  std::string bad("\x00\x00\x00\x00\x09", 5);
  EXPECT_EQ(kind_of([&] { d.feed(bad.data(), bad.size()); }), WireErrorKind::kBadType);
}

TEST(Token, GeneratedTokensAreLongHexAndDistinct) {
  auto a = generate_token(), b = generate_token();
  EXPECT_EQ(a.size(), kTokenHexChars);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
  EXPECT_TRUE(token_problem(a).empty());
}

TEST(Token, ProblemsAreNamed) {
  EXPECT_FALSE(token_problem("short").empty());
  EXPECT_FALSE(token_problem("has a space in the token").empty());
}

TEST(SocketIo, ReadFrameTimesOutAndReportsTruncation) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Fd a(sv[0]), b(sv[1]);
  auto t0 = Clock::now();
  EXPECT_EQ(kind_of([&] { read_frame(a.get(), deadline_in_ms(100)); }), WireErrorKind::kTimeout);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  EXPECT_GE(ms, 90);
  EXPECT_LT(ms, 1000);
  std::string part = encode_frame({FrameType::kHello, "0123456789"}).substr(0, 9);
  write_all(b.get(), part.data(), part.size(), deadline_in_ms(100), "test");
  b.reset();
  EXPECT_EQ(kind_of([&] { read_frame(a.get(), deadline_in_ms(500)); }), WireErrorKind::kTruncated);
}

TEST(SocketIo, OversizedHeaderOnASocketIsRejectedBeforeReadingThePayload) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Fd a(sv[0]), b(sv[1]);
  std::string h("\x7f\xff\xff\xff\x02", 5);
  write_all(b.get(), h.data(), h.size(), deadline_in_ms(100), "test");
  EXPECT_EQ(kind_of([&] { read_frame(a.get(), deadline_in_ms(500)); }), WireErrorKind::kOversized);
  Fd c, d;
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  c.reset(sv[0]);
  d.reset(sv[1]);
  d.reset();
  EXPECT_EQ(kind_of([&] { read_frame(c.get(), deadline_in_ms(500)); }), WireErrorKind::kClosed);
}

}  // namespace
}  // namespace fabkit::wire
