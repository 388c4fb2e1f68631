#include "trainer/app/run_monitor.h"

#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>

#include "common/errors.h"
#include "trainer/app/step_engine.h"
#include "trainer/control/agree.h"

namespace fabkit::trainer {

RunMonitor::RunMonitor(const std::string& output_dir, bool no_control, int rank, int local_rank,
                       const Environment& env, TrainLog& log)
    : log_(log) {
  if (local_rank == 0 && !no_control) {
    const std::string job = control::job_id_from_output_dir(output_dir);
    try {
      server_.emplace(
          control::ControlServerOptions{job, control::control_dir_for(env), output_dir});
      log.info("control: fabtrain control status|save|stop|abort " + job + " (socket " +
               server_->socket_path().string() + ")");
    } catch (const std::exception& e) {
      // The socket is for people; training does not depend on it. Another live job with this
      // output directory's name, or two "nodes" sharing one /tmp (network namespaces on one
      // machine) racing for the same socket: train on, uncontrolled, and say why.
      log.warn(std::string("no control socket: ") + e.what());
    }
  }
  if (rank == 0) {
    tensorboard_.emplace(
        monitor::EventWriter::create_in(std::filesystem::path(output_dir) / "tensorboard"));
    progress_.emplace(STDERR_FILENO);
    log.attach_progress(&*progress_);
  }
}

void RunMonitor::text(int64_t step, const std::string& tag, const std::string& text) {
  if (tensorboard_) tensorboard_->write_text(step, tag, text);
}

control::Action RunMonitor::requested() {
  return control::stronger(server_ ? server_->poll() : control::Action::kNone,
                           signals_.requested());
}

void RunMonitor::after_step(const StepFigures& f) {
  if (server_) server_->publish_status({f.step, f.total_steps, f.loss, f.tokens_per_s, "training"});
  if (tensorboard_) {
    // Scalars on the steps that read them (log steps): reading them every step would wait for
    // the GPU every step.
    if (f.fresh) {
      tensorboard_->write_step(f.step, {f.loss, f.lr, f.tokens_per_s, f.grad_norm,
                                        static_cast<double>(f.peak_memory_bytes)});
    }
    eta_.observe(f.step, monitor::wall_time_now_s());
    progress_->update(
        {f.step, f.total_steps, f.loss, f.tokens_per_s, eta_.seconds_left(f.total_steps)});
  }
}

control::Action ControlAgreement::read(Pending& p) {
  p.landed->wait();
  const std::vector<double> sums = read_landed(p.votes);
  FABKIT_ENFORCE(sums.size() == control::kVotes, "the step's control votes are 3 sums");
  return control::agreed_action(sums.data());
}

control::Action ControlAgreement::after_step(const at::Tensor& votes, CommRequestPtr landed,
                                             bool read_now) {
  control::Action a = control::Action::kNone;
  if (pending_) {
    a = read(*pending_);
    pending_.reset();
  }
  Pending now{votes, std::move(landed)};
  if (!defer_ || read_now) {
    a = control::stronger(a, read(now));
  } else {
    pending_ = std::move(now);
  }
  return a;
}

void RunMonitor::after_eval(int64_t step, double valid_loss) {
  if (tensorboard_) tensorboard_->write_eval(step, valid_loss);
}

void RunMonitor::saving(int64_t step, int64_t total_steps) {
  if (server_) server_->publish_status({step, total_steps, std::nan(""), 0.0, "saving"});
}

std::string RunMonitor::signal_note() const {
  const int sig = signals_.last_signal();
  if (sig == 0) return "";
  return std::string(" (") +
         (sig == SIGTERM   ? "SIGTERM"
          : sig == SIGUSR1 ? "SIGUSR1"
          : sig == SIGINT  ? "SIGINT"
                           : "signal") +
         ")";
}

}  // namespace fabkit::trainer
