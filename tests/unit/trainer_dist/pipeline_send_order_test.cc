// Under NCCL a pair's point-to-point calls are matched in the order they are posted, not by their
// tag: every send a rank posts to a peer must come in the order that peer posts its receives from
// it. Four ranks over Gloo run one interleaved 1F1B step (P = 4, M = 8, V = 2: the shape whose
// lists hold some sends back past the next computation), each comm recording its point-to-point
// calls and reporting itself as NCCL (the runner then posts in the list's order) or as Gloo (each
// send as soon as its computation ends); under both, each pair's orders agree.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <mutex>

#include "tests/unit/trainer_dist/forwarding_comm.h"
#include "tests/unit/trainer_dist/gloo_rank_threads.h"
#include "trainer/model/llama.h"
#include "trainer/parallel/llama_plan.h"
#include "trainer/parallel/pipeline_runner.h"

namespace fabkit::trainer {
namespace {

class RecordingComm : public ForwardingComm {
 public:
  RecordingComm(Comm& inner, std::string backend) : ForwardingComm(inner), backend_(backend) {}
  std::string backend() const override { return backend_; }
  void send(const float* d, size_t n, int dst, int tag) override {
    sends[dst].push_back(tag);
    ForwardingComm::send(d, n, dst, tag);
  }
  CommRequestPtr send_async(const float* d, size_t n, int dst, int tag) override {
    sends[dst].push_back(tag);
    return ForwardingComm::send_async(d, n, dst, tag);
  }
  void recv(float* d, size_t n, int src, int tag) override {
    recvs[src].push_back(tag);
    ForwardingComm::recv(d, n, src, tag);
  }
  std::map<int, std::vector<int>> sends, recvs;  // by peer, tags in the order posted

 private:
  std::string backend_;
};

LlamaConfig eight_layers() {
  Json j = {{"hidden_size", 16},        {"intermediate_size", 32}, {"num_hidden_layers", 8},
            {"num_attention_heads", 2}, {"num_key_value_heads", 1}, {"vocab_size", 40},
            {"tie_word_embeddings", false}};
  return parse_llama_config(j, "test");
}

// For every ordered pair (a, b): a's sends to b, and b's receives from a, as tag sequences.
using Orders = std::map<std::pair<int, int>, std::pair<std::vector<int>, std::vector<int>>>;

Orders run_interleaved_step(const std::string& backend) {
  constexpr int kRanks = 4, kChunks = 2, kMicro = 8;
  const PipeShape shape{kRanks, kMicro, kChunks};
  std::vector<std::map<int, std::vector<int>>> sends(kRanks), recvs(kRanks);
  run_ranks(kRanks, [&](Comm& world) {
    RecordingComm comm(world, backend);
    const int rank = world.rank();
    LlamaModel model(eight_layers(), torch::kFloat32, 3);
    auto batch = std::make_shared<MicroBatch>();
    // One layer per virtual stage; chunk c of this rank is virtual stage c * P + rank.
    LlamaPlan plan;
    std::vector<size_t> chunk_first;
    for (int c = 0; c < kChunks; ++c) {
      const int g = c * kRanks + rank;
      LlamaPlan part = plan_llama_stage(model, batch, g, g + 1, g == 0, g == kRanks * kChunks - 1);
      const size_t offset = plan.units.size();
      chunk_first.push_back(plan.stages.size());
      for (auto& st : part.stages) {
        st.unit += offset;
        plan.stages.push_back(std::move(st));
      }
      for (auto& u : part.units) plan.units.push_back(std::move(u));
    }
    std::unique_ptr<Comm> alone = make_local_comm();
    ShardedModel sharded(*alone, plan.units, plan.stages, false);
    sharded.set_chunks(chunk_first);
    PipelineRunner runner(comm, sharded, rank, 1, 0, PipeSchedule::kInterleaved1F1B, shape,
                          torch::kFloat32);
    torch::manual_seed(5);
    const torch::Tensor ids = torch::randint(0, 40, {kMicro, 6}, torch::kInt64);
    runner.run_step(
        [&](int mb) {
          batch->input_ids = ids.narrow(0, mb, 1);
          batch->labels = batch->input_ids;
          batch->attention_mask = torch::ones_like(batch->input_ids);
          batch->loss_normalizer = 6.0 * kMicro;
        },
        [](int) { return std::vector<int64_t>{1, 6, 16}; }, 1.0);
    sends[rank] = comm.sends;
    recvs[rank] = comm.recvs;
  });
  Orders out;
  for (int a = 0; a < kRanks; ++a) {
    for (const auto& [b, tags] : sends[a]) out[{a, b}] = {tags, recvs[b][a]};
  }
  return out;
}

TEST(PipelineSendOrder, EverySendGoesInTheOrderItsReceiverPostsTheReceives) {
  for (const std::string backend : {"nccl", "gloo"}) {
    const Orders orders = run_interleaved_step(backend);
    EXPECT_EQ(orders.size(), 8u) << backend;  // a ring of 4 ranks, both directions
    for (const auto& [pair, o] : orders) {
      EXPECT_FALSE(o.first.empty());
      EXPECT_EQ(o.first, o.second) << backend << ": rank " << pair.first << " -> rank "
                                   << pair.second << ": sends vs receives";
    }
  }
}

}  // namespace
}  // namespace fabkit::trainer
