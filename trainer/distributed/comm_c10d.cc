#include "trainer/distributed/comm_c10d.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "trainer/distributed/collective_phase.h"

namespace fabkit::trainer {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }
std::string progress_key(int r) { return "progress/" + std::to_string(r); }
std::string host_key(int r) { return "host/" + std::to_string(r); }

std::string this_host() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return std::string(host) + " pid " + std::to_string(getpid());
}

// How long a wait blocks before it posts its collective number, and how long a rank that timed
// out waits for the others' posts: short against the timeout, so a peer that is merely slower to
// time out has posted by then (it posted when its own wait started blocking).
milliseconds post_after(int timeout_ms) {
  return milliseconds(std::clamp(timeout_ms / 4, 1, 1000));
}
milliseconds gather_grace(int timeout_ms) {
  return milliseconds(std::clamp(timeout_ms / 4, 200, 2000));
}
// How often the watcher looks: how late past the deadline it may notice, and how long a completed
// collective's works stay held.
milliseconds watch_period(int timeout_ms) {
  return milliseconds(std::clamp(timeout_ms / 10, 10, 100));
}

std::mutex phase_mutex;
std::string& current_phase() {
  static std::string phase;
  return phase;
}

// "allgather of step 12": the collective as errors and progress posts name it.
std::string named(const char* op) {
  const std::lock_guard<std::mutex> lock(phase_mutex);
  return current_phase().empty() ? std::string(op) : std::string(op) + " of " + current_phase();
}

}  // namespace

// The store traffic of the deadline, on a thread of its own: a store whose host stopped (rank 0
// under SIGSTOP serves it) blocks this thread, never the wait that must meet its deadline.
class StoreReporter {
 public:
  StoreReporter(c10::intrusive_ptr<c10d::Store> store, int rank, int world)
      : s_(std::make_shared<State>()) {
    s_->store = std::move(store);
    s_->rank = rank;
    s_->world = world;
    std::thread([s = s_] { loop(*s); }).detach();
  }
  ~StoreReporter() {
    std::lock_guard<std::mutex> lk(s_->m);
    s_->stop = true;
    s_->cv.notify_all();
    // The thread owns a reference to the state: it may finish a blocked store call after this.
  }

  // A wait started blocking at collective p: unless unwatch() comes first, p is posted at `at`.
  void watch(const ProgressPost& p, Clock::time_point at) {
    std::lock_guard<std::mutex> lk(s_->m);
    s_->watched = p;
    s_->watch_at = at;
    s_->cv.notify_all();
  }
  void unwatch() {
    std::lock_guard<std::mutex> lk(s_->m);
    s_->watched.reset();
  }
  void post_host(const std::string& host) {
    std::lock_guard<std::mutex> lk(s_->m);
    s_->host = host;
    s_->cv.notify_all();
  }

  // Posts `mine`, waits up to `grace` for every rank's post, and returns what each rank posted;
  // nullopt when the store did not answer by grace + 2 s (store_error says why when known).
  std::optional<std::vector<PeerView>> gather(const ProgressPost& mine, milliseconds grace,
                                              std::string* store_error) {
    std::unique_lock<std::mutex> lk(s_->m);
    // The timed-out post supersedes a waiting post still due: posted after it, it would read as
    // a rank that went quiet at the collective instead of one that timed out there.
    s_->watched.reset();
    s_->gather = mine;
    s_->grace = grace;
    s_->ready = false;
    s_->cv.notify_all();
    const bool answered =
        s_->done.wait_for(lk, grace + milliseconds(2000), [&] { return s_->ready; });
    if (!s_->error.empty()) *store_error = s_->error;
    if (!answered) return std::nullopt;
    return s_->views;
  }

 private:
  struct State {
    std::mutex m;
    std::condition_variable cv, done;
    c10::intrusive_ptr<c10d::Store> store;
    int rank = 0, world = 0;
    std::optional<ProgressPost> watched;
    Clock::time_point watch_at;
    std::optional<std::string> host;
    std::optional<ProgressPost> gather;
    milliseconds grace{0};
    bool ready = false, stop = false;
    std::vector<PeerView> views;
    std::string error;
  };

  static void loop(State& s) {
    std::unique_lock<std::mutex> lk(s.m);
    while (true) {
      auto ready = [&] { return s.stop || s.host || s.gather; };
      if (s.watched) {
        s.cv.wait_until(lk, s.watch_at, [&] { return ready() || !s.watched; });
      } else {
        s.cv.wait(lk, [&] { return ready() || s.watched; });
      }
      if (s.stop) return;
      const bool post_due = s.watched && Clock::now() >= s.watch_at;
      if (!ready() && !post_due) continue;
      try {
        if (s.host) {
          const std::string h = *s.host;
          s.host.reset();
          lk.unlock();
          s.store->set(host_key(s.rank), bytes(h));
          lk.lock();
        } else if (post_due && !s.gather) {
          const ProgressPost p = *s.watched;
          s.watched.reset();
          lk.unlock();
          s.store->set(progress_key(s.rank), bytes(format_progress(p)));
          lk.lock();
        } else {
          const ProgressPost mine = *s.gather;
          const milliseconds grace = s.grace;
          lk.unlock();
          std::vector<PeerView> views = collect(s, mine, grace);
          lk.lock();
          s.views = std::move(views);
          s.gather.reset();
          s.ready = true;
          s.done.notify_all();
        }
      } catch (const std::exception& e) {
        if (!lk.owns_lock()) lk.lock();
        s.error = first_line(e.what());
        if (s.gather) {  // answer the waiting rank with what is known: nothing
          s.views.assign(static_cast<size_t>(s.world), PeerView{});
          s.gather.reset();
          s.ready = true;
          s.done.notify_all();
        }
      }
    }
  }

  // A peer is settled once it timed out at this collective too (or is past it): until then, up
  // to `grace`, its post is read again, so one that only waits here is told from one that went
  // quiet here (judge_laggards).
  static bool settled(const PeerView& v, const ProgressPost& mine) {
    return v.post && (v.post->seq > mine.seq || (v.post->seq == mine.seq && v.post->timed_out));
  }

  static std::vector<PeerView> collect(State& s, ProgressPost mine, milliseconds grace) {
    mine.timed_out = true;
    s.store->set(progress_key(s.rank), bytes(format_progress(mine)));
    std::vector<PeerView> views(static_cast<size_t>(s.world));
    const auto deadline = Clock::now() + grace;
    while (true) {
      bool all_here = true;
      for (int r = 0; r < s.world; ++r) {
        PeerView& v = views[static_cast<size_t>(r)];
        if (r == s.rank || settled(v, mine)) continue;
        // check() first: get() would block until the key exists.
        if (s.store->check({progress_key(r)}))
          v.post = parse_progress(text(s.store->get(progress_key(r))));
        if (!settled(v, mine)) all_here = false;
      }
      if (all_here || Clock::now() >= deadline) break;
      std::this_thread::sleep_for(milliseconds(50));
    }
    for (int r = 0; r < s.world; ++r) {
      if (s.store->check({host_key(r)}))
        views[static_cast<size_t>(r)].host = text(s.store->get(host_key(r)));
    }
    return views;
  }

  std::shared_ptr<State> s_;
};

namespace {

// The works of one collective in flight plus what to do once they landed.
class C10dRequest : public CommRequest {
 public:
  C10dRequest(C10dGroup& group, std::string op, uint64_t seq, size_t count, C10dWorks works,
              std::function<void()> finish, bool host_wait)
      : group_(group),
        op_(std::move(op)),
        seq_(seq),
        count_(count),
        works_(std::move(works)),
        finish_(std::move(finish)),
        host_wait_(host_wait) {}
  ~C10dRequest() override {
    // The backend may still write into the caller's buffers: never leave before it is done,
    // unless the group already failed (the process is on its way out with the error).
    if (!done_ && !group_.dead()) {
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
    group_.wait_works(op_, seq_, count_, works_, host_wait_);
    if (finish_) finish_();
  }

 private:
  C10dGroup& group_;
  std::string op_;
  uint64_t seq_;
  size_t count_;
  C10dWorks works_;
  std::function<void()> finish_;
  bool host_wait_;
  bool done_ = false;
};

}  // namespace

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

void set_collective_phase(std::string phase) {
  const std::lock_guard<std::mutex> lock(phase_mutex);
  current_phase() = std::move(phase);
}

C10dGroup::C10dGroup(std::string backend, const CommOptions& o)
    : backend_(std::move(backend)),
      rank_(o.rank),
      world_(o.world_size),
      host_(this_host()),
      timeout_ms_(o.collective_timeout_ms),
      pause_timeout_ms_(std::max(o.pause_timeout_ms, o.collective_timeout_ms)),
      serves_store_(o.rank == 0 && !o.store_hosted_by_agent) {}

C10dGroup::~C10dGroup() = default;

milliseconds C10dGroup::backend_timeout(const CommOptions& o) {
  // Twice fabtrain's, and at least a minute more: naming the missing ranks takes up to a few
  // seconds, and a rank that is late to time out must still find its peers' posts.
  return milliseconds(o.collective_timeout_ms + std::max(o.collective_timeout_ms, 60000));
}

void C10dGroup::watch_through(const c10::intrusive_ptr<c10d::Store>& store) {
  store_ = store;
  c10::intrusive_ptr<c10d::Store> own = store;
  try {
    own = store->clone();  // its own connection: the reporter never queues behind the group
  } catch (const std::exception&) {
    // A store without clone() (the in-process HashStore of a world of one) is shared.
  }
  reporter_ = std::make_shared<StoreReporter>(own, rank_, world_);
  reporter_->post_host(host_);
}

CommRequestPtr C10dGroup::issue(const char* op, size_t count,
                                const std::function<C10dWorks()>& start,
                                std::function<void()> finish, bool host_wait) {
  const std::string name = named(op);
  check_alive(name);
  const uint64_t seq = next_seq_++;
  C10dWorks works;
  try {
    works = start();
  } catch (const std::exception& e) {
    fail(name, count, e);
  }
  if (poll_completion_) {
    if (!watcher_) watcher_ = std::make_unique<DeadlineWatcher>(watch_period(timeout_ms_));
    auto completed = [this, works] {
      if (dead_) return true;  // the failure is being reported; nothing more to watch
      try {
        return works_completed(works);
      } catch (const std::exception&) {
        return true;  // a failed work: the host's wait reports it, with the backend's cause
      }
    };
    watcher_->watch({Clock::now() + milliseconds(timeout_ms_), std::move(completed),
                     [this, name, seq, count] { watched_deadline_passed(name, seq, count); }});
  }
  return std::make_unique<C10dRequest>(*this, name, seq, count, std::move(works), std::move(finish),
                                       host_wait);
}

void C10dGroup::run(const char* op, size_t count, const std::function<C10dWorks()>& start,
                    std::function<void()> finish, bool host_wait) {
  issue(op, count, start, std::move(finish), host_wait)->wait();
}

bool C10dGroup::works_completed(const C10dWorks& works) {
  for (const auto& w : works) {
    if (!w->isCompleted()) return false;
  }
  return true;
}

void C10dGroup::wait_works(const std::string& op, uint64_t seq, size_t count, C10dWorks& works,
                           bool host_wait) {
  check_alive(op);
  const auto started = Clock::now();
  const auto deadline = started + milliseconds(timeout_ms_);
  if (reporter_ && host_wait) reporter_->watch({seq, op}, started + post_after(timeout_ms_));
  try {
    for (auto& w : works) {
      if (!host_wait) {
        w->wait();  // NCCL on device buffers: the caller's stream waits, the host goes on
        continue;
      }
      if (poll_completion_) {
        // NCCL: Work::wait(timeout) may tear the communicator down at its timeout; completion
        // (CUDA events) is polled instead, 1 ms at most between looks.
        auto nap = std::chrono::microseconds(20);
        while (!w->isCompleted()) {
          // dead_: the watcher thread met an earlier deadline; its error is thrown here.
          if (dead_ || Clock::now() >= deadline) time_out(op, seq, count);
          std::this_thread::sleep_for(nap);
          nap = std::min(nap * 2, std::chrono::microseconds(1000));
        }
        w->wait();  // rethrows the work's failure
        continue;
      }
      // Gloo: its send/recv works complete only inside wait(), so they are waited for with
      // the time left; a timeout there is told apart from a failure by the clock.
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      try {
        w->wait(std::max(left, milliseconds(1)));
      } catch (const std::exception&) {
        if (Clock::now() + milliseconds(5) >= deadline) time_out(op, seq, count);
        throw;
      }
    }
  } catch (const CommError&) {
    if (reporter_) reporter_->unwatch();
    throw;
  } catch (const std::exception& e) {
    if (reporter_) reporter_->unwatch();
    fail(op, count, e);
  }
  if (reporter_ && host_wait) reporter_->unwatch();
}

void C10dGroup::check_alive(const std::string& op) {
  if (dead_) {
    {
      const std::lock_guard<std::mutex> lock(timeout_m_);
      if (timeout_error_) throw *timeout_error_;  // the watcher's, when the host was elsewhere
    }
    throw CommError(op + " on rank " + std::to_string(rank_) + ": the " + backend_ +
                    " process group already failed; no collective may follow");
  }
}

std::string C10dGroup::who_is_missing(const ProgressPost& mine) {
  if (!reporter_) return "";
  std::string store_error;
  const auto views = reporter_->gather(mine, gather_grace(timeout_ms_), &store_error);
  if (!views) {
    return "the rendezvous store did not answer within " +
           std::to_string((gather_grace(timeout_ms_) + milliseconds(2000)).count()) +
           " ms, so its host (rank 0, or torchrun's agent) is the one stopped or gone" +
           (store_error.empty() ? "" : " (" + store_error + ")");
  }
  std::string s = judge_laggards(rank_, mine, *views, gather_grace(timeout_ms_).count()).text;
  if (!store_error.empty()) s += " (the store failed while asked: " + store_error + ")";
  return s;
}

void C10dGroup::fail(const std::string& op, size_t count, const std::exception& e) {
  const std::string cause = first_line(e.what());
  die(CommError(failure_message(op.c_str(), count, cause)));
}

namespace {
std::mutex dead_group_handler_mutex;
DeadGroupHandler& dead_group_handler() {
  static DeadGroupHandler handler;
  return handler;
}
}  // namespace

void set_dead_group_handler(DeadGroupHandler handler) {
  const std::lock_guard<std::mutex> lock(dead_group_handler_mutex);
  dead_group_handler() = std::move(handler);
}

void C10dGroup::hand_over(const CommError& error) {
  dead_ = true;
  if (handed_over_.exchange(true)) return;  // the first error was said (or is being said)
  DeadGroupHandler handler;
  {
    const std::lock_guard<std::mutex> lock(dead_group_handler_mutex);
    handler = dead_group_handler();
  }
  if (handler) handler(error);
}

void C10dGroup::die(CommError error) {
  hand_over(error);
  throw error;
}

CommError C10dGroup::timeout_error(const std::string& op, uint64_t seq, size_t count) {
  const std::lock_guard<std::mutex> lock(timeout_m_);
  if (timeout_error_) return *timeout_error_;
  dead_ = true;
  const std::string missing = who_is_missing({seq, op});
  if (serves_store_) {
    // The store dies with this process; peers that timed out a little later are still reading
    // each other's posts from it (their deadlines differ by when each reached the collective).
    std::this_thread::sleep_for(gather_grace(timeout_ms_) + milliseconds(1000));
  }
  timeout_error_ =
      CommError(backend_ + " " + op + " (collective #" + std::to_string(seq) + ", " +
                std::to_string(count) + " elements) on rank " + std::to_string(rank_) + "/" +
                std::to_string(world_) + " (" + host_ + ") did not complete within " +
                std::to_string(timeout_ms_) + " ms (--collective-timeout-ms): " + missing +
                " -- the job stops; fix or drain the named host and resume from the newest "
                "checkpoint (--resume)");
  return *timeout_error_;
}

void C10dGroup::time_out(const std::string& op, uint64_t seq, size_t count) {
  die(timeout_error(op, seq, count));
}

void C10dGroup::watched_deadline_passed(const std::string& op, uint64_t seq, size_t count) {
  if (handed_over_) return;  // a failure the host saw first is being said
  hand_over(timeout_error(op, seq, count));
}

void C10dGroup::store_barrier(const std::string& what) {
  check_alive(what);
  const std::string key = "pause/" + std::to_string(next_pause_++);
  try {
    store_->set(key + "/" + std::to_string(rank_), bytes(host_));
    if (store_->add(key, 1) == world_) store_->set(key + "/all", bytes("1"));
    store_->wait({key + "/all"}, milliseconds(pause_timeout_ms_));
  } catch (const std::exception& e) {
    dead_ = true;
    std::string missing;
    try {
      for (int r = 0; r < world_; ++r) {
        if (!store_->check({key + "/" + std::to_string(r)})) {
          std::string host = "host unknown";
          if (store_->check({host_key(r)})) host = text(store_->get(host_key(r)));
          missing +=
              (missing.empty() ? "" : ", ") + ("rank " + std::to_string(r) + " (" + host + ")");
        }
      }
    } catch (const std::exception&) {
      missing = "unknown: the store stopped answering";
    }
    die(CommError("rank " + std::to_string(rank_) + "/" + std::to_string(world_) + " (" + host_ +
                  ") waited " + std::to_string(pause_timeout_ms_) + " ms at " + what +
                  " for the other ranks; missing: " +
                  (missing.empty() ? std::string("none (") + first_line(e.what()) + ")" : missing) +
                  " -- the job stops"));
  }
}

}  // namespace fabkit::trainer
