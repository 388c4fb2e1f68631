#include "trainer/distributed/comm_c10d.h"

namespace fabkit::trainer {
namespace {

// The works of one collective in flight plus what to do once they landed.
class C10dRequest : public CommRequest {
 public:
  C10dRequest(C10dGroup& group, const char* op, size_t count, C10dWorks works,
              std::function<void()> finish)
      : group_(group),
        op_(op),
        count_(count),
        works_(std::move(works)),
        finish_(std::move(finish)) {}
  ~C10dRequest() override {
    // The backend may still write into the caller's buffers: never leave before it is done.
    if (!done_) {
      try {
        wait();
      } catch (const std::exception&) {
        // The group is marked dead; the next collective reports it.
      }
    }
  }
  void wait() override {
    if (done_) return;
    done_ = true;
    group_.wait_works(op_, count_, works_);
    if (finish_) finish_();
  }

 private:
  C10dGroup& group_;
  const char* op_;
  size_t count_;
  C10dWorks works_;
  std::function<void()> finish_;
  bool done_ = false;
};

}  // namespace

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

CommRequestPtr C10dGroup::issue(const char* op, size_t count,
                                const std::function<C10dWorks()>& start,
                                std::function<void()> finish) {
  check_alive(op);
  C10dWorks works;
  try {
    works = start();
  } catch (const std::exception& e) {
    fail(op, count, e);
  }
  return std::make_unique<C10dRequest>(*this, op, count, std::move(works), std::move(finish));
}

void C10dGroup::run(const char* op, size_t count, const std::function<C10dWorks()>& start,
                    std::function<void()> finish) {
  issue(op, count, start, std::move(finish))->wait();
}

void C10dGroup::wait_works(const char* op, size_t count, C10dWorks& works) {
  try {
    for (auto& w : works) w->wait();
  } catch (const std::exception& e) {
    fail(op, count, e);
  }
}

void C10dGroup::check_alive(const char* op) const {
  if (dead_) {
    throw CommError(std::string(op) + " on rank " + std::to_string(rank_) + ": the " + backend_ +
                    " process group already failed; no collective may follow");
  }
}

void C10dGroup::fail(const char* op, size_t count, const std::exception& e) {
  dead_ = true;
  throw CommError(failure_message(op, count, first_line(e.what())));
}

}  // namespace fabkit::trainer
