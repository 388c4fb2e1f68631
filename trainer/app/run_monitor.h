// Monitoring and control of a run, shared by every training loop (sharded data parallel, and the
// pipeline's): the stop signals on every rank, the control socket on each node's local rank 0,
// TensorBoard and the progress line on rank 0, and the action all ranks agree on after a step
// (docs/fabtrain.md, "Control interface").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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

  // After every optimizer step, on every rank (a collective: every rank calls it at the same step).
  // Publishes the figures and returns the action every rank takes now.
  control::Action after_step(Comm& comm, const StepFigures& f);
  void after_eval(int64_t step, double valid_loss);
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

}  // namespace fabkit::trainer
