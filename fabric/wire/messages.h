// The control messages carried in frames: JSON objects with checked fields. Parsing validates
// shape and ranges and names the offending field; what is received is data, never code or a
// command line (agents map an "op" name onto a fixed table of handlers, agent_commands.cc).
#pragma once

#include <cstdint>
#include <string>

#include "common/json.h"
#include "fabric/wire/frame.h"

namespace fabkit::wire {

// Bumped on any incompatible change of the frames or messages below. 2: the challenge-response
// handshake (handshake.h) replaced the token-bearing hello. 3: store and NCCL-readiness exchanges
// as wire frames. 4: the client proves itself first (the server's proof moved into the welcome)
// and agents send heartbeat frames while a request runs.
inline constexpr int kProtocolVersion = 4;

struct Request {
  uint64_t id = 0;
  std::string op;
  Json args = Json::object();
};

struct Response {
  uint64_t id = 0;
  bool ok = true;
  Json result = Json::object();
  std::string error_code;  // when !ok: "wire.bad_message", "agent.bind_failed", ...
  std::string error_message;
};

struct ErrorMessage {
  std::string code;
  std::string message;
};

// How far a long request has come (an all-reduce size sweep: sizes done of total).
struct ProgressNote {
  uint64_t id = 0;  // the request's id
  uint64_t done = 0, total = 0;
};

// The agent is alive and still working on request `id` (FrameType::kHeartbeat), sent every
// kHeartbeatIntervalMs while a request runs.
struct Heartbeat {
  uint64_t id = 0;
};
inline constexpr int kHeartbeatIntervalMs = 1000;
// The most addresses one "set_peers" request carries (256 hosts with 16 addresses each).
inline constexpr size_t kMaxPeerAddresses = 4096;

Json parse_json_payload(const Frame& f);  // throws kMalformedJson / kBadMessage (not an object)

Request parse_request(const Frame& f);
Response parse_response(const Frame& f);
ErrorMessage parse_error(const Frame& f);
ProgressNote parse_progress(const Frame& f);  // done <= total <= 2^20
Heartbeat parse_heartbeat(const Frame& f);

Frame make_frame(const Request& r);
Frame make_frame(const Response& r);
Frame make_frame(const ErrorMessage& e);
Frame make_frame(const ProgressNote& p);
Frame make_frame(const Heartbeat& h);
Frame make_bye();

// Field accessors for request arguments: throw WireError kBadMessage naming the field and the
// accepted range, so a bad request is answered with an error instead of a crash.
std::string get_string(const Json& obj, const char* field, size_t max_len = 4096);
int64_t get_int(const Json& obj, const char* field, int64_t lo, int64_t hi);
int64_t get_int_or(const Json& obj, const char* field, int64_t lo, int64_t hi, int64_t dflt);
bool get_bool_or(const Json& obj, const char* field, bool dflt);
// An IPv4 literal ("198.18.0.1"); received addresses are never resolved through DNS.
std::string get_ipv4(const Json& obj, const char* field);
bool is_ipv4_literal(const std::string& s);

}  // namespace fabkit::wire
