// A fake of trainer/distributed/comm.h for the control tests: ranks are threads that sum through
// shared memory (allreduce_sum on doubles, the one call agree_on_action makes); every other call
// throws, so a test notices if agree_on_action starts using something else.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "trainer/distributed/comm.h"

namespace fabkit::trainer::control {

struct FakeCommGroup {
  explicit FakeCommGroup(int n) : size(n) {}
  int size;
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  int generation = 0;
  std::vector<double> acc, result;
  int allreduce_calls = 0;
};

class ThreadComm : public Comm {
 public:
  ThreadComm(FakeCommGroup* g, int rank) : g_(g), rank_(rank) {}
  int rank() const override { return rank_; }
  int world_size() const override { return g_->size; }
  std::string backend() const override { return "fake"; }
  std::string transport() const override { return "threads"; }
  void allreduce_sum(double* data, size_t count) override {
    std::unique_lock<std::mutex> l(g_->m);
    if (g_->arrived == 0) g_->acc.assign(count, 0.0);
    for (size_t i = 0; i < count; ++i) g_->acc[i] += data[i];
    const int gen = g_->generation;
    if (++g_->arrived == g_->size) {
      g_->result = g_->acc;
      g_->arrived = 0;
      ++g_->generation;
      ++g_->allreduce_calls;
      g_->cv.notify_all();
    } else if (!g_->cv.wait_for(l, std::chrono::seconds(10),
                                [&] { return g_->generation != gen; })) {
      throw CommError("fake allreduce: the other ranks did not arrive within 10 s");
    }
    for (size_t i = 0; i < count; ++i) data[i] = g_->result[i];
  }
  [[noreturn]] void unused(const char* what) {
    throw CommError(std::string("fake comm: ") + what + " not expected");
  }
  void allreduce_sum(float*, size_t) override { unused("allreduce_sum(float)"); }
  void allgather(const float*, size_t, float*) override { unused("allgather"); }
  CommRequestPtr allgather_async(const float*, size_t, float*) override {
    unused("allgather_async");
  }
  CommRequestPtr reduce_scatter_add_async(const float*, size_t, float*) override {
    unused("reduce_scatter");
  }
  void broadcast(float*, size_t, int) override { unused("broadcast"); }
  void broadcast_bytes(void*, size_t, int) override { unused("broadcast_bytes"); }
  void allgather_bytes(const void*, size_t, void*) override { unused("allgather_bytes"); }
  void barrier() override { unused("barrier"); }
  void send(const float*, size_t, int, int) override { unused("send"); }
  void recv(float*, size_t, int, int) override { unused("recv"); }

 private:
  FakeCommGroup* g_;
  int rank_;
};

}  // namespace fabkit::trainer::control
