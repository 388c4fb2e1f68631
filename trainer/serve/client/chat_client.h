// `fabtrain chat`: the one-line test of a running `fabtrain serve` (or any OpenAI-compatible
// server): sends one chat message to POST /v1/chat/completions and prints the reply, streamed as
// it is generated or whole. Plain C++ over cpp-httplib, no LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace fabkit::serve {

struct ChatArgs {
  std::string url = "http://127.0.0.1:8000";  // the server, http://HOST[:PORT][/PREFIX]
  std::string message;                        // the user's message (required)
  std::string system;                         // a system message before it, when not empty
  std::string model;                          // empty: the first of GET /v1/models
  std::optional<int64_t> max_tokens;
  std::optional<double> temperature;
  std::optional<uint64_t> seed;
  bool stream = true;
  std::string api_key_file;                   // a bearer token, read from this file
  int timeout_s = 120;                        // connect, and each read of the reply
  bool usage = false;                         // print the token counts to `err` afterwards
};

// Where an http:// URL points. UsageError naming the URL and what is wrong (https, no host, a bad
// port, a query or fragment).
struct ServerUrl {
  std::string host;
  int port = 80;
  std::string prefix;  // path before /v1, no trailing slash ("" or "/api")
};
ServerUrl parse_server_url(const std::string& url);

// The request body: {"model", "messages", "stream", and the optional sampling fields}.
std::string chat_request_body(const ChatArgs& args, const std::string& model);

// Sends the message; the reply's text goes to `out` (streamed: each piece as it arrives), errors
// and --usage to `err`. Returns the exit code: 0 a reply; 1 the server answered with an error
// (its OpenAI-shaped message and status are printed); 2 bad arguments (URL, key file);
// 3 the server could not be reached, timed out, or sent what is not an OpenAI reply.
int run_chat(const ChatArgs& args, std::ostream& out, std::ostream& err);

}  // namespace fabkit::serve
