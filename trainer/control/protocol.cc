#include "trainer/control/protocol.h"

#include "common/json_read.h"
#include "trainer/control/endpoint.h"

namespace fabkit::trainer::control {

std::string parse_request(const std::string& line) {
  Json j;
  try {
    j = parse_json(line, "the request");
  } catch (const JsonReadError& e) {
    throw ProtocolError(errc::kMalformedJson,
                        std::string(e.what()) + "; send one line like {\"command\": \"status\"}");
  }
  if (!j.is_object() || !j.contains("command") || !j["command"].is_string())
    throw ProtocolError(
        errc::kBadRequest,
        "the request needs a string field \"command\" (status, stop, save or abort): got " +
            j.dump().substr(0, 200));
  if (j.contains("protocol") && j["protocol"] != kProtocolVersion)
    throw ProtocolError(errc::kVersionMismatch, "the request speaks control protocol " +
                                                    j["protocol"].dump() + ", this job speaks " +
                                                    std::to_string(kProtocolVersion) +
                                                    ": use the fabtrain that started the job");
  std::string c = j["command"].get<std::string>();
  if (c != "status" && c != "stop" && c != "save" && c != "abort")
    throw ProtocolError(errc::kUnknownCommand, "unknown command '" + c.substr(0, 100) +
                                                   "': expected status, stop, save or abort");
  return c;
}

std::string ok_reply(const std::string& job, const std::string& command, Json body) {
  Json j{{"ok", true}, {"protocol", kProtocolVersion}, {"job", job}, {"command", command}};
  for (auto& [k, v] : body.items()) j[k] = v;
  return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string error_reply(const char* code, const std::string& message) {
  return Json{{"ok", false}, {"protocol", kProtocolVersion}, {"error", code}, {"message", message}}
             .dump(-1, ' ', false, Json::error_handler_t::replace) +
         "\n";
}

}  // namespace fabkit::trainer::control
