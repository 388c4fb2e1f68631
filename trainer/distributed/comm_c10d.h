// What the two c10d backends of Comm (comm_gloo.cc, comm_nccl.cc) share: a request over the
// c10d Works of one collective, and the rule that a failed collective ends the group. Included
// only by those two files and comm_c10d.cc, the trainer's c10d users.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <cstddef>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "trainer/distributed/comm.h"

namespace fabkit::trainer {

using C10dWorks = std::vector<c10::intrusive_ptr<c10d::Work>>;

// The group side: issues collectives, waits for them, and marks the group dead on the first
// failure, since peers may be blocked in another collective and the group cannot be reused.
class C10dGroup {
 public:
  virtual ~C10dGroup() = default;

  // Starts one collective (or the sends and receives of one exchange) and returns its request;
  // finish runs after the works landed (a local sum, a copy back; it also keeps staged buffers
  // alive until then).
  CommRequestPtr issue(const char* op, size_t count, const std::function<C10dWorks()>& start,
                       std::function<void()> finish);
  // issue(...)->wait().
  void run(const char* op, size_t count, const std::function<C10dWorks()>& start,
           std::function<void()> finish = nullptr);
  void wait_works(const char* op, size_t count, C10dWorks& works);

 protected:
  C10dGroup(std::string backend, int rank) : backend_(std::move(backend)), rank_(rank) {}
  // The CommError text of a failed collective: the backend's likely causes and where to look.
  virtual std::string failure_message(const char* op, size_t count,
                                      const std::string& cause) const = 0;

  const std::string backend_;  // "Gloo", "NCCL"
  const int rank_;
  bool dead_ = false;

 private:
  void check_alive(const char* op) const;
  [[noreturn]] void fail(const char* op, size_t count, const std::exception& e);
};

// The first line of an exception's text (c10d's carry a C++ stack trace after it).
std::string first_line(const std::string& s);

}  // namespace fabkit::trainer
