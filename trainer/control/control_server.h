// The job side of `fabtrain control`: a Unix socket served by a background thread, so `status`
// answers at once even while a step runs for minutes, and the training loop only polls.
//
// Loop usage (docs/fabtrain.md, "Control interface"):
//   ControlServer server({job_id, control_dir_for(env), output_dir});   // local rank 0
//   StopSignals signals;                                                // every rank
//   each step: server.publish_status({...});
//              Action a = agree_on_action(comm, stronger(server.poll(), signals.requested()));
//
// Every client gets its own deadline (io_timeout_ms from accept): one that connects and sends
// nothing is dropped when it passes, and meanwhile other clients are served (all connections are
// polled together). Only this user may connect: the socket is 0600 in a 0700 directory, and the
// peer's uid (SO_PEERCRED) is checked as well.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <mutex>
#include <string>
#include <thread>

#include "common/unique_fd.h"
#include "trainer/control/action.h"
#include "trainer/control/endpoint.h"
#include "reports/term/eta.h"

namespace fabkit::trainer::control {

struct JobStatus {
  int64_t step = 0;
  int64_t total_steps = 0;
  double loss = std::numeric_limits<double>::quiet_NaN();  // NaN: no step finished yet
  double tokens_per_s = 0;
  std::string phase = "starting";  // "starting", "training", "evaluating", "saving", "stopping"
};

struct ControlServerOptions {
  std::string job;                    // check_job_id rules; job_id_from_output_dir gives a default
  std::filesystem::path control_dir;  // control_dir_for(env)
  std::filesystem::path output_dir;   // recorded in the registration, shown by `list`
  int io_timeout_ms = 2000;           // per connection, from accept to the reply written
  int max_connections = 16;           // more at once are answered control.busy
};

class ControlServer {
 public:
  // Creates the private directory (or checks it: open_control_dir), binds <dir>/<job>.sock (0600),
  // writes <dir>/<job>.json and starts the thread. A live job with the same id -> UsageError naming
  // it; a dead one's leftover endpoint is replaced. A socket path past sun_path's 108 bytes ->
  // UsageError with the fix.
  explicit ControlServer(const ControlServerOptions& options);
  // Stops the thread, removes the socket and the registration.
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Never blocks on a client: returns the strongest action requested since the last call and
  // clears it (kNone when none).
  Action poll();
  // What `status` reports; the ETA comes from the steps published here.
  void publish_status(const JobStatus& s);

  const std::filesystem::path& socket_path() const { return socket_path_; }
  const std::filesystem::path& registration_path() const { return registration_path_; }

 private:
  void serve();
  std::string handle(const std::string& line);  // never throws: errors become error replies
  std::string handle_checked(const std::string& line);
  std::string status_reply();

  ControlServerOptions options_;
  PrivateDir dir_;  // the checked control directory; the socket and registration live in it
  std::filesystem::path socket_path_;
  std::filesystem::path registration_path_;
  UniqueFd listen_fd_;
  UniqueFd wake_read_, wake_write_;
  std::atomic<int> pending_{0};
  std::mutex mutex_;  // guards status_, eta_, status_time_s_
  JobStatus status_;
  reports::term::EtaEstimator eta_;
  double status_time_s_ = 0;  // unix time of the last publish_status
  std::thread thread_;
};

}  // namespace fabkit::trainer::control
