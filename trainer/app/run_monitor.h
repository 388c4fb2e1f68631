// Monitoring and control of a run, shared by every training loop (sharded data parallel, and the
// pipeline's): the stop signals on every rank, the control socket on each node's local rank 0,
// TensorBoard and the progress line on rank 0, and the action all ranks agree on after a step
// (docs/fabtrain.md, "Control interface").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <ATen/ATen.h>

#include "common/environment.h"
#include "trainer/app/train_log.h"
#include "trainer/control/action.h"
#include "trainer/control/control_server.h"
#include "trainer/control/stop_signals.h"
#include "trainer/distributed/comm.h"
#include "reports/term/eta.h"
#include "trainer/monitor/event_writer.h"
#include "reports/term/progress_line.h"

namespace fabkit::trainer {

// `fabtrain control abort` / a second SIGINT: 128 + SIGINT, as a shell reports an interrupted
// program, so a script does not take the run for finished.
inline constexpr int kAbortExitCode = 130;

struct StepFigures {
  int64_t step = 0;
  int64_t total_steps = 0;
  double loss = 0;
  double lr = 0;
  double tokens_per_s = 0;
  double grad_norm = 0;
  int64_t peak_memory_bytes = -1;  // GPU allocator peak on GPU, max RSS on CPU; -1 unknown
  // loss and grad_norm were read at this step (a log step); else they are the newest log step's,
  // shown by the control status but not written to TensorBoard again.
  bool fresh = true;
};

class RunMonitor {
 public:
  // local_rank 0 serves the control socket unless no_control; rank 0 writes TensorBoard under
  // output_dir/tensorboard and draws the progress line (attached to log).
  RunMonitor(const std::string& output_dir, bool no_control, int rank, int local_rank,
             const Environment& env, TrainLog& log);

  // What this rank's signals and (local rank 0) its node's control socket ask for, once per step
  // before the step's collective: the vote that rides in it (ControlAgreement below). The
  // socket's requests are cleared by the call.
  control::Action requested();
  // After every optimizer step: publishes the figures (control status, TensorBoard, progress).
  void after_step(const StepFigures& f);
  void after_eval(int64_t step, double valid_loss);
  // A text summary on rank 0's TensorBoard (nothing elsewhere).
  void text(int64_t step, const std::string& tag, const std::string& text);
  void saving(int64_t step, int64_t total_steps);
  // " (SIGTERM)" when a signal asked for the action, else "".
  std::string signal_note() const;

 private:
  const TrainLog& log_;
  control::StopSignals signals_;
  std::optional<control::ControlServer> server_;
  std::optional<monitor::EventWriter> tensorboard_;
  std::optional<reports::term::ProgressLine> progress_;
  reports::term::EtaEstimator eta_;
};

// The action every rank takes after a step, from the votes (control/agree.h) that ride in the
// step's one collective (StepEngine::finish_step): no collective of its own.
//
// Why one step late on a GPU: the votes are summed on the device, and reading them at once would
// wait for the whole step's queue (a host sync per step, the GPU idle while the host catches up).
// So, when `defer` (the model on a GPU), step k's votes are read after step k+1's work is queued:
// by then the GPU is usually past step k, and the host waits only for step k's collective to land
// (with the collective deadline, the missing ranks named) and a 24-byte copy, while the GPU
// works on step k+1. Every rank reads the same sums at the same step, so every rank acts at the
// same step. A log step reads the step's figures anyway (a sync): there the step's own votes are
// read too, so with --log-every 1 (the default) a request takes effect at the step it was seen
// by, as on the CPU. Bound: a request seen before step k's collective takes effect after step k
// (CPU, log steps) or step k+1 (GPU, between log steps); a request at the last step of a run is
// not read after it (the run ends with its final checkpoint anyway).
// Not deferred (the CPU): the votes are host memory, read after the step's collective.
class ControlAgreement {
 public:
  explicit ControlAgreement(bool defer) : defer_(defer) {}
  // After step k (its logging, evaluation and periodic save): the action for every rank now.
  // `votes` and `landed` are step k's StepSums::extra and ::landed; read_now: a log step.
  control::Action after_step(const at::Tensor& votes, CommRequestPtr landed, bool read_now);

 private:
  struct Pending {
    at::Tensor votes;
    CommRequestPtr landed;
  };
  static control::Action read(Pending& p);
  bool defer_;
  std::optional<Pending> pending_;  // the previous step's votes, when deferred
};

}  // namespace fabkit::trainer
