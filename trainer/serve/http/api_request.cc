#include "trainer/serve/http/api_request.h"

#include <cmath>
#include <limits>

#include "common/json_read.h"
#include "trainer/serve/http/api_error.h"

namespace fabkit::serve {
namespace {

using Json = nlohmann::ordered_json;

std::string type_name(const Json& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_number_float()) return "a number";
  if (v.is_boolean()) return "a boolean";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

// Absent and null both mean "not given", as in OpenAI's API.
const Json* field(const Json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<int64_t> int_field(const Json& body, const char* name, int64_t min, int64_t max) {
  const Json* v = field(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer()) {
    throw bad_field(name, std::string("'") + name + "' must be an integer, got " + type_name(*v));
  }
  if (v->is_number_unsigned() &&
      v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
    throw bad_field(name,
                    std::string("'") + name + "' is too large: at most " + std::to_string(max));
  }
  int64_t n = v->get<int64_t>();
  if (n < min || n > max) {
    throw bad_field(name, std::string("'") + name + "' is " + std::to_string(n) +
                              "; it must be in [" + std::to_string(min) + ", " +
                              std::to_string(max) + "]");
  }
  return n;
}

std::optional<double> number_field(const Json& body, const char* name) {
  const Json* v = field(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) {
    throw bad_field(name, std::string("'") + name + "' must be a number, got " + type_name(*v));
  }
  double x = v->get<double>();
  if (!std::isfinite(x)) throw bad_field(name, std::string("'") + name + "' must be finite");
  return x;
}

std::optional<bool> bool_field(const Json& body, const char* name) {
  const Json* v = field(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) {
    throw bad_field(name, std::string("'") + name + "' must be a boolean, got " + type_name(*v));
  }
  return v->get<bool>();
}

Json parse_object(const std::string& body) {
  Json j;
  try {
    j = parse_json(body, "the request body");
  } catch (const JsonReadError& e) {
    throw ApiError(400, "the request body is " + e.detail(),
                   "invalid_request_error", "", "invalid_json");
  }
  if (!j.is_object()) {
    throw ApiError(400, "the request body must be a JSON object, got " + type_name(j),
                   "invalid_request_error", "", "invalid_json");
  }
  return j;
}

// Fields whose meaning this server does not implement: refused by name rather than ignored, so a
// client never gets an answer that silently differs from what it asked for. Each entry says
// which value is the harmless default that may still be sent.
void refuse_unsupported(const Json& body) {
  struct Unsupported {
    const char* name;
    bool (*harmless)(const Json&);
  };
  static const Unsupported kUnsupported[] = {
      {"logprobs", [](const Json& v) { return v.is_boolean() && !v.get<bool>(); }},
      {"top_logprobs",
       [](const Json& v) { return v.is_number_integer() && v.get<int64_t>() == 0; }},
      {"echo", [](const Json& v) { return v.is_boolean() && !v.get<bool>(); }},
      {"best_of", [](const Json& v) { return v.is_number_integer() && v.get<int64_t>() == 1; }},
      {"suffix", [](const Json& v) { return v.is_string() && v.get<std::string>().empty(); }},
      {"logit_bias", [](const Json& v) { return v.is_object() && v.empty(); }},
      {"presence_penalty", [](const Json& v) { return v.is_number() && v.get<double>() == 0.0; }},
      {"frequency_penalty", [](const Json& v) { return v.is_number() && v.get<double>() == 0.0; }},
      {"tools", [](const Json& v) { return v.is_array() && v.empty(); }},
      {"tool_choice",
       [](const Json& v) { return v.is_string() && v.get<std::string>() == "none"; }},
      {"functions", [](const Json& v) { return v.is_array() && v.empty(); }},
      {"response_format",
       [](const Json& v) { return v.is_object() && v.value("type", std::string()) == "text"; }},
  };
  for (const auto& u : kUnsupported) {
    const Json* v = field(body, u.name);
    if (v != nullptr && !u.harmless(*v)) {
      throw bad_field(
          u.name, std::string("'") + u.name + "' is not supported by fabtrain serve; leave it out");
    }
  }
}

std::vector<std::string> parse_stop(const Json& body) {
  const Json* v = field(body, "stop");
  if (v == nullptr) return {};
  std::vector<std::string> stops;
  if (v->is_string()) {
    stops.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > kMaxStopStrings) {
      throw bad_field("stop", "'stop' has " + std::to_string(v->size()) + " strings; at most " +
                                  std::to_string(kMaxStopStrings));
    }
    for (const auto& s : *v) {
      if (!s.is_string()) {
        throw bad_field("stop",
                        "'stop' must be a string or a list of strings; an item is " + type_name(s));
      }
      stops.push_back(s.get<std::string>());
    }
  } else {
    throw bad_field("stop", "'stop' must be a string or a list of strings, got " + type_name(*v));
  }
  for (const auto& s : stops) {
    if (s.empty()) throw bad_field("stop", "'stop' strings must not be empty");
  }
  return stops;
}

// The fields both endpoints share.
void parse_common(const Json& body, ApiRequest& r) {
  const Json* model = field(body, "model");
  if (model == nullptr) throw bad_field("model", "'model' is required (GET /v1/models lists it)");
  if (!model->is_string()) {
    throw bad_field("model", "'model' must be a string, got " + type_name(*model));
  }
  r.model = model->get<std::string>();
  refuse_unsupported(body);

  constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
  r.max_tokens = int_field(body, "max_tokens", 1, kMaxInt);
  if (auto t = number_field(body, "temperature")) {
    if (*t < 0 || *t > kMaxTemperature) {
      throw bad_field("temperature", "'temperature' is " + std::to_string(*t) +
                                         "; it must be in [0, 2] (0 is greedy)");
    }
    r.sampling.temperature = *t;
  }
  if (auto p = number_field(body, "top_p")) {
    if (!(*p > 0 && *p <= 1)) {
      throw bad_field("top_p", "'top_p' is " + std::to_string(*p) + "; it must be in (0, 1]");
    }
    r.sampling.top_p = *p;
  }
  if (auto k = int_field(body, "top_k", -1, kMaxInt)) {
    r.sampling.top_k = *k < 0 ? 0 : *k;  // -1 means off, as vLLM spells it
  }
  if (auto s = int_field(body, "seed", std::numeric_limits<int64_t>::min(), kMaxInt)) {
    r.sampling.seed = static_cast<uint64_t>(*s);
  }
  r.stop = parse_stop(body);
  if (auto n = int_field(body, "n", 1, kMaxInt); n && *n != 1) {
    throw bad_field(
        "n", "'n' is " + std::to_string(*n) + "; fabtrain serve generates one choice (n = 1)");
  }
  r.stream = bool_field(body, "stream").value_or(false);
  if (const Json* so = field(body, "stream_options")) {
    if (!so->is_object()) {
      throw bad_field("stream_options",
                      "'stream_options' must be an object, got " + type_name(*so));
    }
    if (!r.stream) {
      throw bad_field("stream_options", "'stream_options' is only allowed with 'stream': true");
    }
    if (auto u = so->find("include_usage"); u != so->end() && !u->is_null()) {
      if (!u->is_boolean()) {
        throw bad_field("stream_options.include_usage",
                        "'stream_options.include_usage' must be a boolean, got " + type_name(*u));
      }
      r.include_usage = u->get<bool>();
    }
  }
}

void parse_prompt(const Json& body, ApiRequest& r) {
  const Json* p = field(body, "prompt");
  if (p == nullptr)
    throw bad_field("prompt", "'prompt' is required: a string or a list of token ids");
  const std::string kWhat =
      "'prompt' must be a string, a list of one string, or a list of token ids";
  if (p->is_string()) {
    r.prompt_text = p->get<std::string>();
    return;
  }
  if (!p->is_array() || p->empty()) throw bad_field("prompt", kWhat + ", got " + type_name(*p));
  if ((*p)[0].is_string()) {
    if (p->size() != 1) {
      throw bad_field("prompt", "'prompt' has " + std::to_string(p->size()) +
                                    " prompts; fabtrain serve takes one per request");
    }
    r.prompt_text = (*p)[0].get<std::string>();
    return;
  }
  for (const auto& id : *p) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0) {
      throw bad_field("prompt",
                      kWhat + "; an item is " +
                          (id.is_number_integer() ? std::string("negative") : type_name(id)));
    }
    r.prompt_ids.push_back(id.get<int64_t>());
  }
}

void parse_messages(const Json& body, ApiRequest& r) {
  const Json* m = field(body, "messages");
  if (m == nullptr)
    throw bad_field("messages", "'messages' is required: a list of {role, content}");
  if (!m->is_array() || m->empty()) {
    throw bad_field("messages", "'messages' must be a non-empty list of {role, content}, got " +
                                    (m->is_array() ? std::string("an empty list") : type_name(*m)));
  }
  for (size_t i = 0; i < m->size(); ++i) {
    const Json& msg = (*m)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object())
      throw bad_field(at, "'" + at + "' must be an object, got " + type_name(msg));
    auto role = msg.find("role");
    if (role == msg.end() || !role->is_string()) {
      throw bad_field(at + ".role",
                      "'" + at + ".role' must be a string (system, user, assistant, tool)");
    }
    auto content = msg.find("content");
    if (content != msg.end() && !content->is_string() && !content->is_array() &&
        !content->is_null()) {
      throw bad_field(at + ".content",
                      "'" + at + ".content' must be a string, a list of parts or null, got " +
                          type_name(*content));
    }
  }
  r.messages = *m;
}

}  // namespace

ApiRequest parse_completion_request(const std::string& body) {
  Json j = parse_object(body);
  ApiRequest r;
  parse_common(j, r);
  parse_prompt(j, r);
  return r;
}

ApiRequest parse_chat_request(const std::string& body) {
  Json j = parse_object(body);
  ApiRequest r;
  r.chat = true;
  parse_common(j, r);
  // OpenAI deprecated max_tokens for chat in favour of max_completion_tokens; the newer wins.
  if (auto m = int_field(j, "max_completion_tokens", 1, std::numeric_limits<int64_t>::max())) {
    r.max_tokens = m;
    r.max_tokens_field = "max_completion_tokens";
  }
  parse_messages(j, r);
  return r;
}

}  // namespace fabkit::serve
