#include "fabric/wire/messages.h"

#include <arpa/inet.h>

#include "common/json_read.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::wire {
namespace {

[[noreturn]] void bad(const std::string& what) { throw WireError(WireErrorKind::kBadMessage, what); }

void expect_type(const Frame& f, FrameType t) {
  if (f.type != t)
    bad(std::string("expected a ") + to_string(t) + " frame, got " + to_string(f.type));
}

// Node facts quote files and env verbatim; replace invalid UTF-8 rather than throw mid-session.
Frame json_frame(FrameType t, const Json& j) {
  return Frame{t, j.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

}  // namespace

Json parse_json_payload(const Frame& f) {
  Json j;
  try {
    j = parse_json(f.payload, std::string(to_string(f.type)) + " frame payload");
  } catch (const JsonReadError& e) {
    throw WireError(WireErrorKind::kMalformedJson, e.what());
  }
  if (!j.is_object()) bad(std::string(to_string(f.type)) + " frame payload is not a JSON object");
  return j;
}

std::string get_string(const Json& obj, const char* field, size_t max_len) {
  auto it = obj.find(field);
  if (it == obj.end() || !it->is_string()) bad(std::string("field '") + field + "' must be a string");
  const auto& s = it->get_ref<const std::string&>();
  if (s.size() > max_len)
    bad(std::string("field '") + field + "' is longer than " + std::to_string(max_len));
  return s;
}

int64_t get_int(const Json& obj, const char* field, int64_t lo, int64_t hi) {
  auto it = obj.find(field);
  if (it == obj.end() || !it->is_number_integer())
    bad(std::string("field '") + field + "' must be an integer");
  int64_t v = it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                  ? INT64_MAX
                  : it->get<int64_t>();
  if (v < lo || v > hi)
    bad(std::string("field '") + field + "' = " + std::to_string(v) + " is outside " +
        std::to_string(lo) + ".." + std::to_string(hi));
  return v;
}

int64_t get_int_or(const Json& obj, const char* field, int64_t lo, int64_t hi, int64_t dflt) {
  if (!obj.contains(field)) return dflt;
  return get_int(obj, field, lo, hi);
}

bool get_bool_or(const Json& obj, const char* field, bool dflt) {
  auto it = obj.find(field);
  if (it == obj.end()) return dflt;
  if (!it->is_boolean()) bad(std::string("field '") + field + "' must be true or false");
  return it->get<bool>();
}

bool is_ipv4_literal(const std::string& s) {
  in_addr a{};
  return s.size() <= 15 && ::inet_pton(AF_INET, s.c_str(), &a) == 1;
}

std::string get_ipv4(const Json& obj, const char* field) {
  std::string s = get_string(obj, field, 64);
  if (!is_ipv4_literal(s))
    bad(std::string("field '") + field + "' = '" + s + "' is not an IPv4 address literal");
  return s;
}

Request parse_request(const Frame& f) {
  expect_type(f, FrameType::kRequest);
  Json j = parse_json_payload(f);
  Request r;
  r.id = static_cast<uint64_t>(get_int(j, "id", 0, INT64_MAX));
  r.op = get_string(j, "op", 64);
  if (j.contains("args")) {
    if (!j["args"].is_object()) bad("field 'args' must be an object");
    r.args = j["args"];
  }
  return r;
}

Response parse_response(const Frame& f) {
  expect_type(f, FrameType::kResponse);
  Json j = parse_json_payload(f);
  Response r;
  r.id = static_cast<uint64_t>(get_int(j, "id", 0, INT64_MAX));
  auto ok = j.find("ok");
  if (ok == j.end() || !ok->is_boolean()) bad("field 'ok' must be true or false");
  r.ok = ok->get<bool>();
  if (r.ok) {
    auto res = j.find("result");
    if (res != j.end()) r.result = *res;
  } else {
    auto e = j.find("error");
    if (e == j.end() || !e->is_object()) bad("field 'error' must be an object when ok is false");
    r.error_code = get_string(*e, "code", 128);
    r.error_message = get_string(*e, "message", 1 << 16);
  }
  return r;
}

ErrorMessage parse_error(const Frame& f) {
  expect_type(f, FrameType::kError);
  Json j = parse_json_payload(f);
  return {get_string(j, "code", 128), get_string(j, "message", 1 << 16)};
}

ProgressNote parse_progress(const Frame& f) {
  expect_type(f, FrameType::kProgress);
  Json j = parse_json_payload(f);
  ProgressNote p;
  p.id = static_cast<uint64_t>(get_int(j, "id", 0, INT64_MAX));
  p.total = static_cast<uint64_t>(get_int(j, "total", 0, 1 << 20));
  p.done = static_cast<uint64_t>(get_int(j, "done", 0, static_cast<int64_t>(p.total)));
  return p;
}

Heartbeat parse_heartbeat(const Frame& f) {
  expect_type(f, FrameType::kHeartbeat);
  Json j = parse_json_payload(f);
  return {static_cast<uint64_t>(get_int(j, "id", 0, INT64_MAX))};
}

Frame make_frame(const Request& r) {
  return json_frame(FrameType::kRequest, {{"id", r.id}, {"op", r.op}, {"args", r.args}});
}

Frame make_frame(const Response& r) {
  Json j = {{"id", r.id}, {"ok", r.ok}};
  if (r.ok)
    j["result"] = r.result;
  else
    j["error"] = {{"code", r.error_code}, {"message", r.error_message}};
  return json_frame(FrameType::kResponse, j);
}

Frame make_frame(const ErrorMessage& e) {
  return json_frame(FrameType::kError, {{"code", e.code}, {"message", e.message}});
}

Frame make_frame(const ProgressNote& p) {
  return json_frame(FrameType::kProgress, {{"id", p.id}, {"done", p.done}, {"total", p.total}});
}

Frame make_frame(const Heartbeat& h) { return json_frame(FrameType::kHeartbeat, {{"id", h.id}}); }

Frame make_bye() { return json_frame(FrameType::kBye, Json::object()); }

}  // namespace fabkit::wire
