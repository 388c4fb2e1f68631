// DecodeEngine: continuous batching gives each request the tokens it gets alone; stop tokens,
// max_tokens, cancellation, a full queue, bad requests, seeded sampling and shutdown.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "tests/unit/serve_engine/token_collector.h"
#include "trainer/serve/engine/decode_engine.h"

namespace fabkit::serve {
namespace {

using testing::collect;
using testing::Collected;

trainer::LlamaModel tiny_model() {
  trainer::LlamaConfig c;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.vocab_size = 96;
  c.max_position_embeddings = 48;
  c.rms_norm_eps = 1e-5;
  c.initializer_range = 0.15;
  c.tie_word_embeddings = true;
  return trainer::LlamaModel(c, torch::kFloat32, /*seed=*/3);
}

GenerationRequest greedy(std::vector<int64_t> prompt, int64_t max_tokens) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  return r;
}

DecodeEngineOptions options(int64_t max_batch, int64_t queue_capacity = 16) {
  DecodeEngineOptions o;
  o.max_batch = max_batch;
  o.queue_capacity = queue_capacity;
  return o;
}

// Runs one request on its own and returns what it produced.
std::shared_ptr<Collected> run_alone(trainer::LlamaModel model, GenerationRequest r) {
  DecodeEngine engine(model, options(1));
  auto c = std::make_shared<Collected>();
  EXPECT_TRUE(engine.submit(std::move(r), collect(c)));
  EXPECT_TRUE(c->wait_done());
  return c;
}

// Waits (generous bound) for the engine's thread to publish a state after a sink returned.
bool eventually(const std::function<bool()>& cond) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

TEST(DecodeEngine, RequestsJoiningAndLeavingMidBatchGetTheirTokensAlone) {
  auto model = tiny_model();
  const std::vector<GenerationRequest> requests = {
      greedy({1, 5, 9}, 12), greedy({1, 40, 41, 42, 43, 44, 45, 46}, 7), greedy({1}, 10),
      greedy({1, 70, 2, 70}, 5), greedy({1, 33, 34, 35, 36}, 9)};
  std::vector<std::vector<int64_t>> alone;
  uint64_t steps_alone = 0;
  for (const auto& r : requests) {
    auto c = run_alone(model, r);
    ASSERT_EQ(c->tokens.size(), static_cast<size_t>(r.max_tokens));
    alone.push_back(c->tokens);
    steps_alone += r.max_tokens - 1;
  }

  std::vector<std::shared_ptr<Collected>> got(requests.size());
  for (auto& g : got) g = std::make_shared<Collected>();
  DecodeEngine engine(model, options(8));  // after what its sinks use: destroyed first
  // 0 and 1 start together; 2 joins after 0's second token, 3 after its fourth, 4 after 1's
  // third: submitted from the sinks, on the engine thread, so they join at known steps.
  auto submit_from_sink = [&](size_t which) {
    EXPECT_TRUE(engine.submit(requests[which], collect(got[which])));
  };
  ASSERT_TRUE(engine.submit(requests[0], collect(got[0], [&](int64_t n) {
                              if (n == 2) submit_from_sink(2);
                              if (n == 4) submit_from_sink(3);
                              return true;
                            })));
  ASSERT_TRUE(engine.submit(requests[1], collect(got[1], [&](int64_t n) {
                              if (n == 3) submit_from_sink(4);
                              return true;
                            })));
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_TRUE(got[i]->wait_calls(1)) << "request " << i << " never ran";
    ASSERT_TRUE(got[i]->wait_done()) << "request " << i;
    EXPECT_EQ(got[i]->tokens, alone[i]) << "request " << i;
    EXPECT_EQ(got[i]->last.finish, FinishReason::kLength) << "request " << i;
    EXPECT_EQ(got[i]->calls_after_done, 0) << "request " << i;
  }
  ASSERT_TRUE(eventually([&] { return engine.stats().running == 0; }));
  auto s = engine.stats();
  // Batched: fewer decode steps than the requests took one by one.
  EXPECT_LT(s.decode_steps, steps_alone);
  uint64_t generated = 0, prompt = 0;
  for (const auto& r : requests) generated += r.max_tokens, prompt += r.prompt.size();
  EXPECT_EQ(s.generated_tokens, generated);
  EXPECT_EQ(s.prompt_tokens, prompt);
}

TEST(DecodeEngine, AStopTokenEndsTheRequestAfterReportingIt) {
  auto model = tiny_model();
  auto free_run = run_alone(model, greedy({1, 7, 8}, 16));
  // The first token that did not occur before it: stopping on it ends the run right there.
  size_t at = 1;
  while (std::find(free_run->tokens.begin(), free_run->tokens.begin() + at, free_run->tokens[at]) !=
         free_run->tokens.begin() + at)
    ++at;
  ASSERT_LT(at, free_run->tokens.size());
  auto r = greedy({1, 7, 8}, 16);
  r.stop_token_ids = {free_run->tokens[at], 95};
  auto stopped = run_alone(model, r);
  EXPECT_EQ(stopped->tokens,
            std::vector<int64_t>(free_run->tokens.begin(), free_run->tokens.begin() + at + 1));
  EXPECT_EQ(stopped->last.finish, FinishReason::kStop);
  EXPECT_EQ(stopped->last.token, free_run->tokens[at]);
  EXPECT_EQ(free_run->last.finish, FinishReason::kLength);
  EXPECT_EQ(free_run->last.token, free_run->tokens.back());
}

TEST(DecodeEngine, ACancelledRequestFreesItsSlot) {
  auto model = tiny_model();
  DecodeEngine engine(model, options(1));
  auto cancelled = std::make_shared<Collected>();
  auto next = std::make_shared<Collected>();
  ASSERT_TRUE(
      engine.submit(greedy({1, 2, 3}, 30), collect(cancelled, [](int64_t n) { return n < 3; })));
  ASSERT_TRUE(engine.submit(greedy({1, 4}, 5), collect(next)));
  // With one slot, the second request runs only once the first has left it.
  ASSERT_TRUE(next->wait_done());
  EXPECT_EQ(next->tokens.size(), 5u);
  EXPECT_EQ(next->last.finish, FinishReason::kLength);
  EXPECT_EQ(cancelled->snapshot().size(), 3u);
  EXPECT_EQ(cancelled->calls, 3);  // nothing after the sink said no
  EXPECT_FALSE(cancelled->done);
  ASSERT_TRUE(eventually([&] { return engine.stats().running == 0; }));
}

TEST(DecodeEngine, ASinkThatThrowsIsCancelledAndTheEngineGoesOn) {
  auto model = tiny_model();
  DecodeEngine engine(model, options(2));
  ASSERT_TRUE(engine.submit(greedy({1, 2}, 10), [](const TokenEvent&) -> bool {
    throw std::runtime_error("client went away");
  }));
  auto other = std::make_shared<Collected>();
  ASSERT_TRUE(engine.submit(greedy({1, 3}, 6), collect(other)));
  ASSERT_TRUE(other->wait_done());
  EXPECT_EQ(other->tokens.size(), 6u);
}

TEST(DecodeEngine, AFullQueueRefusesAndTheSinkIsNeverCalled) {
  auto model = tiny_model();
  DecodeEngine engine(model, options(/*max_batch=*/1, /*queue_capacity=*/2));
  // The first request's sink holds the engine thread on its first token, so the queue cannot
  // drain while the test fills it.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto first = std::make_shared<Collected>();
  ASSERT_TRUE(engine.submit(greedy({1, 2}, 3), collect(first, [released](int64_t n) {
                              if (n == 1) released.wait();
                              return true;
                            })));
  ASSERT_TRUE(first->wait_calls(1));  // taken from the queue, holding the thread
  auto b = std::make_shared<Collected>(), c = std::make_shared<Collected>(),
       refused = std::make_shared<Collected>();
  EXPECT_TRUE(engine.submit(greedy({1, 3}, 2), collect(b)));
  EXPECT_TRUE(engine.submit(greedy({1, 4}, 2), collect(c)));
  EXPECT_FALSE(engine.submit(greedy({1, 5}, 2), collect(refused)));
  auto s = engine.stats();
  EXPECT_EQ(s.queued, 2);
  EXPECT_EQ(s.running, 0);  // the first is still in its prefill's sink call
  EXPECT_EQ(s.queue_capacity, 2);
  EXPECT_EQ(s.max_batch, 1);
  release.set_value();
  for (auto& x : {first, b, c}) {
    ASSERT_TRUE(x->wait_done());
    EXPECT_EQ(x->last.finish, FinishReason::kLength);
  }
  EXPECT_EQ(refused->calls, 0);
}

TEST(DecodeEngine, BadRequestsEndWithANamedErrorAndTheEngineGoesOn) {
  auto model = tiny_model();  // context 48, vocabulary 96
  DecodeEngine engine(model, options(4));
  struct Bad {
    GenerationRequest request;
    std::string named;
  };
  std::vector<Bad> bad = {{greedy(std::vector<int64_t>(40, 1), 9), "context length 48"},
                          {greedy(std::vector<int64_t>(49, 1), 1), "context length 48"},
                          {greedy({1, 96}, 4), "vocabulary"},
                          {greedy({1, -3}, 4), "vocabulary"},
                          {greedy({}, 4), "prompt is empty"},
                          {greedy({1}, 0), "max_tokens"}};
  GenerationRequest hot = greedy({1}, 4);
  hot.sampling.temperature = -1;
  bad.push_back({hot, "temperature"});
  for (auto& b : bad) {
    auto c = std::make_shared<Collected>();
    ASSERT_TRUE(engine.submit(b.request, collect(c)));
    ASSERT_TRUE(c->wait_done());
    EXPECT_EQ(c->last.finish, FinishReason::kError) << b.named;
    EXPECT_EQ(c->last.token, -1);
    EXPECT_EQ(c->calls, 1);
    EXPECT_NE(c->last.error.find(b.named), std::string::npos) << c->last.error;
  }
  // Exactly at the context length is allowed.
  auto fits = std::make_shared<Collected>();
  ASSERT_TRUE(engine.submit(greedy(std::vector<int64_t>(40, 1), 8), collect(fits)));
  ASSERT_TRUE(fits->wait_done());
  EXPECT_EQ(fits->tokens.size(), 8u);
  EXPECT_EQ(fits->last.finish, FinishReason::kLength);
}

TEST(DecodeEngine, SeededSamplingIsReproducibleInAnyBatch) {
  auto model = tiny_model();
  auto sampled = [](uint64_t seed) {
    GenerationRequest r = greedy({1, 11, 12}, 16);
    r.sampling.temperature = 1.5;  // flatter than the model: draws matter
    r.sampling.top_p = 0.95;
    r.sampling.top_k = 40;
    r.sampling.seed = seed;
    return r;
  };
  auto a = run_alone(model, sampled(7));
  auto again = run_alone(model, sampled(7));
  auto other = run_alone(model, sampled(8));
  EXPECT_EQ(a->tokens, again->tokens);
  EXPECT_NE(a->tokens, other->tokens);
  auto greedy_run = run_alone(model, greedy({1, 11, 12}, 16));
  EXPECT_NE(a->tokens, greedy_run->tokens);
  // top_k = 1 at any temperature is greedy.
  GenerationRequest top1 = sampled(99);
  top1.sampling.top_k = 1;
  EXPECT_EQ(run_alone(model, top1)->tokens, greedy_run->tokens);

  // The same seeded request beside others in a batch draws the same tokens.
  DecodeEngine engine(model, options(4));
  auto in_batch = std::make_shared<Collected>();
  std::vector<std::shared_ptr<Collected>> others;
  for (uint64_t s : {1, 2}) {
    others.push_back(std::make_shared<Collected>());
    ASSERT_TRUE(engine.submit(sampled(s), collect(others.back())));
  }
  ASSERT_TRUE(engine.submit(sampled(7), collect(in_batch)));
  ASSERT_TRUE(in_batch->wait_done());
  EXPECT_EQ(in_batch->tokens, a->tokens);
  for (auto& o : others) ASSERT_TRUE(o->wait_done());
}

TEST(DecodeEngine, ShutdownCancelsQueuedAndRunningRequests) {
  auto model = tiny_model();
  auto engine = std::make_unique<DecodeEngine>(model, options(1));
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto running = std::make_shared<Collected>(), queued = std::make_shared<Collected>();
  ASSERT_TRUE(engine->submit(greedy({1, 2}, 40), collect(running, [released](int64_t n) {
                               if (n == 1) released.wait();
                               return true;
                             })));
  ASSERT_TRUE(running->wait_calls(1));
  ASSERT_TRUE(engine->submit(greedy({1, 3}, 5), collect(queued)));
  engine->request_stop();
  EXPECT_FALSE(engine->submit(greedy({1, 4}, 5), collect(std::make_shared<Collected>())));
  release.set_value();
  engine.reset();  // joins the thread
  ASSERT_TRUE(running->done);
  EXPECT_EQ(running->tokens.size(), 1u);
  EXPECT_EQ(running->last.finish, FinishReason::kCancelled);
  EXPECT_EQ(running->last.token, -1);
  ASSERT_TRUE(queued->done);
  EXPECT_TRUE(queued->tokens.empty());
  EXPECT_EQ(queued->last.finish, FinishReason::kCancelled);
}

TEST(DecodeEngine, OptionsOutOfRangeAreNamed) {
  auto model = tiny_model();
  auto message = [&](DecodeEngineOptions o) -> std::string {
    try {
      DecodeEngine engine(model, o);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message(options(0)).find("max_batch"), std::string::npos);
  EXPECT_NE(message(options(1, 0)).find("queue_capacity"), std::string::npos);
  DecodeEngineOptions long_context = options(1);
  long_context.context_length = 49;
  EXPECT_NE(message(long_context).find("context_length"), std::string::npos);
  DecodeEngineOptions short_context = options(1);
  short_context.context_length = 20;
  DecodeEngine engine(model, short_context);
  EXPECT_EQ(engine.context_length(), 20);
  EXPECT_EQ(engine.vocab_size(), 96);
}

}  // namespace
}  // namespace fabkit::serve
