// `decode_bench`: fabtrain serve's decode engine on one model folder, greedy, for decode_bench.py
// (which runs Hugging Face generate() on the same folder and prints the ratios). Prints one JSON
// line: decode tokens/s of one stream (tokens after the first over the time after the first, so
// the prefill is left out), aggregate tokens/s of `--streams` concurrent streams (every token
// over the whole wall time, prefills included), the time to the first token of one
// `--ttft-prompt-len` prompt (submit to the first token: the prefill and the first draw), and the
// tokens each stream generated, which decode_bench.py checks against generate()'s.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <vector>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>

#include "bench/bench_timing.h"
#include "common/json.h"
#include "trainer/model/pretrained.h"
#include "trainer/serve/engine/decode_engine.h"

namespace {

using Clock = std::chrono::steady_clock;
using fabkit::serve::GenerationRequest;
using fabkit::serve::TokenEvent;

struct Run {
  double first_token_s = 0, wall_s = 0;  // per the slowest stream
  int64_t tokens = 0;
  std::vector<std::vector<int64_t>> generated;  // per stream
};

// Starts `streams` greedy requests of prompt_len tokens at once and waits for all of them.
Run run_streams(fabkit::serve::DecodeEngine& engine, int64_t streams, int64_t prompt_len,
                int64_t new_tokens, int64_t vocab) {
  std::mutex mutex;
  std::condition_variable all_done;
  int64_t done = 0, tokens = 0;
  std::vector<Clock::time_point> first(streams);
  std::vector<std::vector<int64_t>> generated(streams);
  const auto start = Clock::now();
  for (int64_t s = 0; s < streams; ++s) {
    GenerationRequest r;
    for (int64_t i = 0; i < prompt_len; ++i) r.prompt.push_back((7 + 31 * i + 101 * s) % vocab);
    r.max_tokens = new_tokens;
    r.sampling.temperature = 0;
    bool ok = engine.submit(r, [&, s](const TokenEvent& e) {
      std::lock_guard<std::mutex> lock(mutex);
      if (e.token >= 0) {
        ++tokens;
        generated[s].push_back(e.token);
        if (first[s] == Clock::time_point{}) first[s] = Clock::now();
      }
      if (e.last && ++done == streams) all_done.notify_all();
      return true;
    });
    if (!ok) throw std::runtime_error("decode_bench: the engine's queue refused a stream");
  }
  std::unique_lock<std::mutex> lock(mutex);
  all_done.wait(lock, [&] { return done == streams; });
  Run run;
  run.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& f : first)
    run.first_token_s =
        std::max(run.first_token_s, std::chrono::duration<double>(f - start).count());
  run.tokens = tokens;
  run.generated = std::move(generated);
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fabtrain serve's decode engine: tokens/s on a model folder"};
  std::string model_dir;
  int64_t prompt_len = 32, new_tokens = 64, streams = 8, threads = 0, repeats = 3;
  int64_t ttft_prompt_len = 512;
  app.add_option("--model", model_dir, "HF model folder")->required();
  app.add_option("--prompt-len", prompt_len)->check(CLI::PositiveNumber);
  app.add_option("--new-tokens", new_tokens)->check(CLI::Range(2, 1 << 20));
  app.add_option("--streams", streams)->check(CLI::PositiveNumber);
  app.add_option("--ttft-prompt-len", ttft_prompt_len, "prompt of the time-to-first-token run")
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "intra-op threads (0 = torch's default)");
  app.add_option("--repeats", repeats, "runs of each measurement; the median is printed")
      ->check(CLI::PositiveNumber);
  std::string device = "cpu";
  app.add_option("--device", device, "cpu | cuda (the first GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}));

  CLI11_PARSE(app, argc, argv);
  try {
    if (threads > 0) at::set_num_threads(static_cast<int>(threads));
    auto loaded = fabkit::trainer::load_pretrained(model_dir);
    if (device == "cuda") {
      // As `fabtrain serve --device cuda`: the model on the device before the engine is built.
      const c10::Device cuda(c10::kCUDA, 0);
      loaded.model->to(cuda);
      loaded.model->set_device(cuda);
    }
    fabkit::serve::DecodeEngineOptions options;
    options.max_batch = streams;
    options.queue_capacity = streams;
    fabkit::serve::DecodeEngine engine(loaded.model, options);
    const int64_t vocab = engine.vocab_size();
    run_streams(engine, 1, prompt_len, 4, vocab);  // warm-up
    std::vector<double> single, aggregate, ttft;
    Run one, many;
    for (int64_t i = 0; i < repeats; ++i) {
      one = run_streams(engine, 1, prompt_len, new_tokens, vocab);
      single.push_back((one.tokens - 1) / (one.wall_s - one.first_token_s));
      many = run_streams(engine, streams, prompt_len, new_tokens, vocab);
      aggregate.push_back(many.tokens / many.wall_s);
      ttft.push_back(run_streams(engine, 1, ttft_prompt_len, 1, vocab).first_token_s);
    }
    fabkit::Json out;
    out["decode_tok_s_batch1"] = fabkit::bench::median(single);
    out["aggregate_tok_s"] = fabkit::bench::median(aggregate);
    out["ttft_s"] = fabkit::bench::median(ttft);
    out["ttft_prompt_len"] = ttft_prompt_len;
    out["single_tokens"] = one.generated.at(0);
    out["stream_tokens"] = many.generated;
    out["streams"] = streams;
    out["threads"] = at::get_num_threads();
    std::cout << out.dump() << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "decode_bench: " << e.what() << std::endl;
    return 2;
  }
}
