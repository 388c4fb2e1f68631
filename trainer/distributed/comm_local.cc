// World of one: every collective is the identity. Used for single-process runs so they need no
// store, port or socket.
#include <algorithm>
#include <cstring>

#include "trainer/distributed/comm.h"

namespace fabkit::trainer {
namespace {

// Collectives of one process complete when issued.
class DoneRequest : public CommRequest {
 public:
  void wait() override {}
};

class LocalComm : public Comm {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string backend() const override { return "local"; }
  std::string transport() const override { return "none (one process)"; }
  void allreduce_sum(float*, size_t) override {}
  void allreduce_sum(double*, size_t) override {}
  void allgather(const float* in, size_t count, float* out) override { std::copy(in, in + count, out); }
  CommRequestPtr allgather_async(const float* in, size_t count, float* out) override {
    allgather(in, count, out);
    return std::make_unique<DoneRequest>();
  }
  CommRequestPtr reduce_scatter_add_async(const float* in, size_t count, float* out) override {
    for (size_t i = 0; i < count; ++i) out[i] += in[i];
    return std::make_unique<DoneRequest>();
  }
  CommRequestPtr reduce_scatter_add_bf16_async(const uint16_t* in, size_t count,
                                               float* out) override {
    // bf16 is the top half of an fp32 word: widened exactly, summed in fp32 (as Gloo does).
    for (size_t i = 0; i < count; ++i) {
      const uint32_t bits = static_cast<uint32_t>(in[i]) << 16;
      float v;
      std::memcpy(&v, &bits, sizeof(v));
      out[i] += v;
    }
    return std::make_unique<DoneRequest>();
  }
  void broadcast(float*, size_t, int) override {}
  void broadcast_bytes(void*, size_t, int) override {}
  void allgather_bytes(const void* in, size_t bytes, void* out) override {
    std::copy_n(static_cast<const unsigned char*>(in), bytes, static_cast<unsigned char*>(out));
  }
  void barrier() override {}
  void send(const float*, size_t, int dst, int) override {
    throw CommError("send to rank " + std::to_string(dst) + " in a world of one process");
  }
  void recv(float*, size_t, int src, int) override {
    throw CommError("recv from rank " + std::to_string(src) + " in a world of one process");
  }
};

}  // namespace

std::unique_ptr<Comm> make_local_comm() { return std::make_unique<LocalComm>(); }

}  // namespace fabkit::trainer
