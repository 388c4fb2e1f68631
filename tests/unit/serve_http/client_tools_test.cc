// Real clients against the server: curl -N (SSE framing on the wire, a 10 MB upload) and the
// `openai` Python package (FABKIT_PYTHON, .venv's: pinned in scripts/python-requirements.txt).
// Both run with timeouts; the openai check skips, saying so, when that interpreter lacks it.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/unit/serve_http/serve_harness.h"

namespace fabkit::serve::fake {
namespace {

using namespace std::chrono_literals;

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

// Runs a shell command (stdout captured); `timeout` bounds it.
CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* p = popen(("timeout 60 " + command).c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool have(const char* program) {
  return run_command(std::string("sh -c 'command -v ") + program + "' >/dev/null").exit_code == 0;
}

TEST(ServeClientTools, CurlSeesSseFraming) {
  if (!have("curl")) GTEST_SKIP() << "curl is not installed";
  FakeBackendOptions o;
  o.step_interval = 5ms;
  Harness h(o);
  CommandResult r = run_command(
      "curl -sN --max-time 30 -H 'Content-Type: application/json' -d "
      "'{\"model\":\"tiny\",\"prompt\":\"hey\",\"max_tokens\":6,\"stream\":true}' " +
      h.url() + "/v1/completions");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string framing_error;
  std::vector<std::string> payloads = sse_payloads(r.out, &framing_error);
  EXPECT_EQ(framing_error, "");
  ASSERT_GE(payloads.size(), 3u) << r.out;
  EXPECT_EQ(payloads.back(), "[DONE]");
  std::string text;
  for (size_t i = 0; i + 1 < payloads.size(); ++i) {
    text += nlohmann::json::parse(payloads[i])["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, "heyhey");
  // The response headers a streaming client needs.
  CommandResult headers = run_command(
      "curl -sN --max-time 30 -D - -o /dev/null -H 'Content-Type: application/json' "
      "-d '{\"model\":\"tiny\",\"prompt\":\"x\",\"max_tokens\":2,\"stream\":true}' " +
      h.url() + "/v1/completions");
  EXPECT_NE(headers.out.find("Content-Type: text/event-stream"), std::string::npos) << headers.out;
  EXPECT_NE(headers.out.find("Transfer-Encoding: chunked"), std::string::npos);
}

TEST(ServeClientTools, CurlTenMegabyteBodyIs413) {
  if (!have("curl")) GTEST_SKIP() << "curl is not installed";
  Harness h;
  const auto file = std::filesystem::temp_directory_path() /
                    ("fabkit-serve-big-" + std::to_string(getpid()) + ".json");
  {
    std::ofstream f(file, std::ios::binary);
    f << R"({"model":"tiny","prompt":")" << std::string(10 << 20, 'x') << "\"}";
  }
  CommandResult r = run_command(
      "curl -s --max-time 30 -o - -w '\\n%{http_code}' -H 'Content-Type: application/json' "
      "--data-binary @" +
      file.string() + " " + h.url() + "/v1/completions");
  std::filesystem::remove(file);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.substr(r.out.rfind('\n') + 1), "413") << r.out;
  EXPECT_NE(r.out.find("body_too_large"), std::string::npos) << r.out;
  EXPECT_TRUE(h.backend.requests().empty());
}

// Without the key, a body is refused at "Expect: 100-continue", before it is sent: curl, held
// to 200 kB/s, would need 15 s to upload these 3 MB, and has 10.
TEST(ServeClientTools, CurlUploadWithoutTheKeyIsRefusedBeforeTheBody) {
  if (!have("curl")) GTEST_SKIP() << "curl is not installed";
  ServerConfig c;
  c.api_key = "test-key";
  Harness h({}, c);
  const auto file = std::filesystem::temp_directory_path() /
                    ("fabkit-serve-unauth-" + std::to_string(getpid()) + ".json");
  {
    std::ofstream f(file, std::ios::binary);
    f << R"({"model":"tiny","prompt":")" << std::string(3 << 20, 'x') << "\"}";
  }
  const std::string upload =
      "curl -s --max-time 10 --limit-rate 200k -o - -w '\\n%{http_code}' "
      "-H 'Expect: 100-continue' -H 'Content-Type: application/json' --data-binary @" +
      file.string() + " ";
  const auto start = std::chrono::steady_clock::now();
  CommandResult r = run_command(upload + h.url() + "/v1/completions");
  const auto took = std::chrono::steady_clock::now() - start;
  std::filesystem::remove(file);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.substr(r.out.rfind('\n') + 1), "401") << r.out;
  EXPECT_NE(r.out.find("invalid_api_key"), std::string::npos) << r.out;
  EXPECT_LT(took, 8s);
  EXPECT_TRUE(h.backend.requests().empty());
  // With the key, the same header gets its 100 and the (small) body is served.
  CommandResult ok = run_command(
      "curl -s --max-time 30 -o /dev/null -w '%{http_code}' -H 'Expect: 100-continue' "
      "-H 'Authorization: Bearer test-key' -H 'Content-Type: application/json' "
      "-d '{\"model\":\"tiny\",\"prompt\":\"hey\",\"max_tokens\":2}' " +
      h.url() + "/v1/completions");
  ASSERT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_EQ(ok.out, "200");
}

TEST(ServeClientTools, OpenAiPythonPackage) {
  ServerConfig c;
  c.api_key = "test-key";
  Harness h({}, c);
  CommandResult r = run_command(std::string(FABKIT_PYTHON) + " " + FABKIT_OPENAI_CHECK + " " +
                                h.url() + "/v1 test-key");
  if (r.exit_code == 3) {
    GTEST_SKIP() << FABKIT_PYTHON << " cannot import openai (scripts/python-requirements.txt "
                 << "pins it; run scripts/setup-python)";
  }
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  const std::string prompt = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(j["models"], nlohmann::json::array({"tiny"}));
  EXPECT_EQ(j["chat"]["content"], prompt.substr(0, 12));
  EXPECT_EQ(j["chat"]["role"], "assistant");
  EXPECT_EQ(j["chat"]["finish_reason"], "length");
  EXPECT_EQ(j["chat"]["usage"], nlohmann::json::array({prompt.size(), 12, prompt.size() + 12}));
  EXPECT_EQ(j["chat_stream"]["content"], prompt.substr(0, 12));
  EXPECT_EQ(j["chat_stream"]["finish_reason"], "length");
  EXPECT_EQ(j["chat_stream"]["usage"], nlohmann::json::array({prompt.size(), 12}));
  EXPECT_EQ(j["completion"]["text"], "ab");  // "abcab" stopped at "ca"
  EXPECT_EQ(j["completion"]["finish_reason"], "stop");
  EXPECT_EQ(j["bad_request"]["status"], 400);
  EXPECT_EQ(j["bad_request"]["param"], "max_tokens");
  EXPECT_EQ(j["not_found"]["status"], 404);
  EXPECT_EQ(j["wrong_key"]["status"], 401);
}

}  // namespace
}  // namespace fabkit::serve::fake
