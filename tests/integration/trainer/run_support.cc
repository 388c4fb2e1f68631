#include "tests/integration/trainer/run_support.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "tests/support/ttar.h"

namespace fabkit::testing {

void write_tiny_model(const std::filesystem::path& dir, bool tied, int layers) {
  Json c = {{"architectures", {"LlamaForCausalLM"}},
            {"model_type", "llama"},
            {"hidden_size", 32},
            {"intermediate_size", 48},
            {"num_hidden_layers", layers},
            {"num_attention_heads", 4},
            {"num_key_value_heads", 2},
            {"vocab_size", 300},
            {"max_position_embeddings", 64},
            {"rms_norm_eps", 1e-6},
            {"rope_theta", 10000.0},
            {"hidden_act", "silu"},
            {"tie_word_embeddings", tied},
            {"torch_dtype", "float32"},
            {"initializer_range", 0.02},
            {"bos_token_id", 1},
            {"eos_token_id", 2}};
  write_file(dir / "config.json", c.dump(2));
}

void write_token_data(const std::filesystem::path& file, int records, int len, int vocab) {
  std::mt19937_64 rng(1234);
  std::ostringstream out;
  for (int r = 0; r < records; ++r) {
    Json ids = Json::array();
    // A learnable pattern (runs of +1) so the loss falls visibly.
    int64_t x = 3 + static_cast<int64_t>(rng() % (vocab - 3));
    for (int i = 0; i < len; ++i) {
      ids.push_back(x);
      x = (rng() % 4 == 0) ? 3 + static_cast<int64_t>(rng() % (vocab - 3)) : 3 + (x - 3 + 1) % (vocab - 3);
    }
    out << Json{{"input_ids", ids}}.dump() << "\n";
  }
  write_file(file, out.str());
}

Started start_fabtrain(const std::vector<std::string>& args, const std::vector<std::string>& env,
                       uint64_t data_limit_bytes) {
  Started s;
  char tmpl[] = "/tmp/fabtrain-test-out-XXXXXX";
  int fd = mkstemp(tmpl);
  s.output_file = tmpl;
  s.t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    setpgid(0, 0);  // the deadline kill reaches the spawned ranks too
    if (data_limit_bytes > 0) {
      struct rlimit lim {
        data_limit_bytes, data_limit_bytes
      };
      setrlimit(RLIMIT_DATA, &lim);
    }
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv{const_cast<char*>(FABTRAIN_BIN)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(FABTRAIN_BIN, argv.data());
    _exit(127);
  }
  close(fd);
  s.pid = pid;
  return s;
}

RunResult finish_fabtrain(const Started& s, int timeout_s) {
  RunResult r;
  int status = 0;
  while (true) {
    pid_t p = waitpid(s.pid, &status, WNOHANG);
    if (p == s.pid) break;
    if (std::chrono::steady_clock::now() - s.t0 > std::chrono::seconds(timeout_s)) {
      kill(-s.pid, SIGKILL);
      waitpid(s.pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(s.output_file);
  std::stringstream ss;
  ss << in.rdbuf();
  r.output = ss.str();
  unlink(s.output_file.c_str());
  return r;
}

RunResult run_fabtrain(const std::vector<std::string>& args, int timeout_s,
                       uint64_t data_limit_bytes) {
  return finish_fabtrain(start_fabtrain(args, {}, data_limit_bytes), timeout_s);
}

std::vector<Json> read_jsonl(const std::filesystem::path& file) {
  std::vector<Json> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    // A line without its newline is one fabtrain is still writing (tests poll metrics.jsonl
    // during a run): parsing it failed a pipeline test now and then with "unexpected end of
    // input". Every line fabtrain finishes ends with '\n'.
    if (in.eof()) break;
    if (!line.empty()) out.push_back(Json::parse(line));
  }
  return out;
}

std::vector<Json> steps_of(const std::filesystem::path& out) {
  std::vector<Json> s;
  for (const auto& j : read_jsonl(out / "metrics.jsonl"))
    if (j.contains("loss")) s.push_back(j);
  return s;
}

std::vector<double> losses(const std::filesystem::path& out) {
  std::vector<double> l;
  for (const auto& j : steps_of(out)) l.push_back(j["loss"].get<double>());
  return l;
}

}  // namespace fabkit::testing
