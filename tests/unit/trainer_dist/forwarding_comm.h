// A Comm that hands every call to another one: tests derive from it and override only the calls
// they count or record.
#pragma once

#include <string>

#include "trainer/distributed/comm.h"

namespace fabkit::trainer {

class ForwardingComm : public Comm {
 public:
  explicit ForwardingComm(Comm& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  std::string backend() const override { return inner_.backend(); }
  std::string transport() const override { return inner_.transport(); }
  void allreduce_sum(float* d, size_t n) override { inner_.allreduce_sum(d, n); }
  void allreduce_sum(double* d, size_t n) override { inner_.allreduce_sum(d, n); }
  void allgather(const float* in, size_t n, float* out) override { inner_.allgather(in, n, out); }
  CommRequestPtr allgather_async(const float* in, size_t n, float* out) override {
    return inner_.allgather_async(in, n, out);
  }
  CommRequestPtr reduce_scatter_add_async(const float* in, size_t n, float* out) override {
    return inner_.reduce_scatter_add_async(in, n, out);
  }
  CommRequestPtr reduce_scatter_add_bf16_async(const uint16_t* in, size_t n, float* out) override {
    return inner_.reduce_scatter_add_bf16_async(in, n, out);
  }
  void broadcast(float* d, size_t n, int root) override { inner_.broadcast(d, n, root); }
  void broadcast_bytes(void* d, size_t b, int root) override { inner_.broadcast_bytes(d, b, root); }
  void allgather_bytes(const void* in, size_t b, void* out) override {
    inner_.allgather_bytes(in, b, out);
  }
  void barrier() override { inner_.barrier(); }
  void send(const float* d, size_t n, int dst, int tag) override { inner_.send(d, n, dst, tag); }
  CommRequestPtr send_async(const float* d, size_t n, int dst, int tag) override {
    return inner_.send_async(d, n, dst, tag);
  }
  void recv(float* d, size_t n, int src, int tag) override { inner_.recv(d, n, src, tag); }

 private:
  Comm& inner_;
};

}  // namespace fabkit::trainer
