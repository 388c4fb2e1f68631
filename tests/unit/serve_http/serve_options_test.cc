// fabtrain serve's options (CLI11), the API key file's checks, the bearer comparison, metrics
// rendering, and run_server's start and clean stop on SIGTERM.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/errors.h"
#include "tests/unit/serve_http/fake_backend.h"
#include "trainer/serve/http/api_key.h"
#include "trainer/serve/http/serve_metrics.h"
#include "trainer/serve/http/serve_options.h"

namespace fabkit::serve {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir()
      : path(fs::temp_directory_path() /
             ("fabkit-serve-" + std::to_string(getpid()) + "-" + std::to_string(counter++))) {
    fs::create_directories(path / "tiny-model");
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path write(const std::string& name, const std::string& text, fs::perms perms) {
    fs::path p = path / name;
    std::ofstream(p) << text;
    fs::permissions(p, perms);
    return p;
  }
  static inline int counter = 0;
  fs::path path;
};

ServeOptions parse(std::vector<std::string> args) {
  CLI::App app("serve");
  ServeOptions o;
  bind_serve_options(app, o);
  std::reverse(args.begin(), args.end());
  app.parse(args);
  return o;
}

TEST(ServeOptionsTest, ParsesAndDefaults) {
  TempDir d;
  const std::string model = (d.path / "tiny-model").string();
  ServeOptions o = parse({"--model", model});
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_EQ(o.port, 8000);
  EXPECT_EQ(served_model_name(o), "tiny-model");
  EXPECT_EQ(served_model_name(parse({"--model", model + "/"})), "tiny-model");
  ServeOptions all =
      parse({"--model", model, "--host", "0.0.0.0", "--port", "0", "--max-batch", "3",
             "--max-queue", "5", "--max-body-bytes", "2048", "--served-model-name", "pal"});
  EXPECT_EQ(served_model_name(all), "pal");
  ServerConfig c = server_config(all);
  EXPECT_EQ(c.host, "0.0.0.0");
  EXPECT_EQ(c.max_body_bytes, 2048u);
  EXPECT_EQ(c.http_threads, 3 + 5 + 16);
  EXPECT_TRUE(c.api_key.empty());
}

TEST(ServeOptionsTest, RefusesBadValues) {
  TempDir d;
  const std::string model = (d.path / "tiny-model").string();
  EXPECT_THROW(parse({}), CLI::ParseError);  // --model is required
  EXPECT_THROW(parse({"--model", (d.path / "missing").string()}), CLI::ParseError);
  EXPECT_THROW(parse({"--model", model, "--port", "70000"}), CLI::ParseError);
  EXPECT_THROW(parse({"--model", model, "--max-batch", "0"}), CLI::ParseError);
  EXPECT_THROW(parse({"--model", model, "--max-queue", "-1"}), CLI::ParseError);
  EXPECT_THROW(parse({"--model", model, "--max-queue", "0"}), CLI::ParseError);
  EXPECT_THROW(parse({"--model", model, "--max-body-bytes", "10"}), CLI::ParseError);
  EXPECT_THROW(parse({"--model", model, "--api-key-file", (d.path / "nokey").string()}),
               CLI::ParseError);
}

TEST(ServeOptionsTest, ApiKeyFile) {
  TempDir d;
  fs::path good = d.write("key", "abc123\n", fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(load_api_key(good), "abc123");
  fs::path world = d.write("world", "abc", fs::perms::owner_read | fs::perms::others_read);
  try {
    load_api_key(world);
    ADD_FAILURE() << "a world-readable key file was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("chmod 600"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_api_key(d.write("empty", "\n", fs::perms::owner_read)), UsageError);
  // The key goes into a header: a second line or a control byte is refused, not sent.
  EXPECT_THROW(load_api_key(d.write("two", "abc\ndef\n", fs::perms::owner_read)), UsageError);
  EXPECT_THROW(load_api_key(d.write("ctl", "ab\x01c", fs::perms::owner_read)), UsageError);
  EXPECT_THROW(load_api_key(d.path), UsageError);  // a directory
  fs::path fifo = d.path / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(load_api_key(fifo), UsageError);  // refused, not blocked on
  ServeOptions o =
      parse({"--model", (d.path / "tiny-model").string(), "--api-key-file", good.string()});
  EXPECT_EQ(server_config(o).api_key, "abc123");
}

TEST(ServeOptionsTest, BearerMatches) {
  EXPECT_TRUE(bearer_matches("Bearer k3y", "k3y"));
  EXPECT_FALSE(bearer_matches("Bearer k3", "k3y"));
  EXPECT_FALSE(bearer_matches("Bearer k3yy", "k3y"));
  EXPECT_FALSE(bearer_matches("Bearer K3y", "k3y"));
  EXPECT_FALSE(bearer_matches("bearer k3y", "k3y"));
  EXPECT_FALSE(bearer_matches("k3y", "k3y"));
  EXPECT_FALSE(bearer_matches("", "k3y"));
  EXPECT_FALSE(bearer_matches("Bearer ", "k3y"));
}

TEST(ServeOptionsTest, MetricsRateWindow) {
  ServeMetrics m;
  auto t0 = ServeMetrics::Clock::now();
  m.count_generated_tokens(50, t0);
  m.count_generated_tokens(50, t0 + std::chrono::seconds(5));
  EXPECT_DOUBLE_EQ(m.generated_tokens_per_second(t0 + std::chrono::seconds(6)), 10.0);
  // The first 50 fall out of the 10-second window.
  EXPECT_DOUBLE_EQ(m.generated_tokens_per_second(t0 + std::chrono::seconds(12)), 5.0);
  m.count_request("/v1/completions", 200);
  m.count_request("/v1/completions", 200);
  m.count_request("other", 404);
  BackendStats s;
  s.queued = 2;
  s.running = 1;
  std::string text = m.render(s, t0 + std::chrono::seconds(12));
  EXPECT_NE(
      text.find("fabtrain_serve_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2\n"),
      std::string::npos);
  EXPECT_NE(text.find("fabtrain_serve_requests_total{endpoint=\"other\",status=\"404\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("fabtrain_serve_generated_tokens_total 100\n"), std::string::npos);
  EXPECT_NE(text.find("fabtrain_serve_queue_depth 2\n"), std::string::npos);
  EXPECT_NE(text.find("fabtrain_serve_running 1\n"), std::string::npos);
  // promtool (Debian's prometheus package) is the reference parser where it is installed.
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    TempDir d;
    fs::path f = d.write("metrics.txt", text, fs::perms::owner_all);
    EXPECT_EQ(std::system(("promtool check metrics < " + f.string() + " >/dev/null 2>&1").c_str()),
              0)
        << text;
  }
}

TEST(ServeOptionsTest, RunServerServesUntilSigterm) {
  TempDir d;
  ServeOptions o = parse({"--model", (d.path / "tiny-model").string(), "--port", "0"});
  fake::FakeBackend backend({});
  trainer::ByteTokenizer tokenizer;
  const pthread_t self = pthread_self();
  // SIGTERM blocked here first, so it waits (pending) for run_server's sigtimedwait however early
  // it comes; aimed at this thread, which is the one in run_server.
  sigset_t term, old_mask;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old_mask);
  std::thread killer([self] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    pthread_kill(self, SIGTERM);
  });
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(run_server(o, backend, tokenizer, std::nullopt), 0);
  killer.join();
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

}  // namespace
}  // namespace fabkit::serve
