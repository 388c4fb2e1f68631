// fabtrain's check of what NCCL really used. The failure fabkit exists for is silent: NCCL falls
// back from IB to TCP sockets and the job runs, slowly. Before the communicator exists, NCCL is
// asked for its INFO log in a file per rank; after the first collectives the log is parsed with
// the same parser as `fabcheck nccl-log` (fabric/nccl_log) and the network is logged, and
// `--require-transport IB|RoCE|Socket|<plugin>` stops the job when NCCL used another one.
#pragma once

#include <optional>
#include <string>

#include "trainer/app/train_log.h"
#include "trainer/distributed/comm.h"

namespace fabkit::trainer {

struct NcclLogPlan {
  std::string file;  // where this rank's NCCL INFO log goes ("" when NCCL_DEBUG stays below INFO)
  std::string adjustments;  // what was set ("NCCL_DEBUG=INFO NCCL_DEBUG_FILE=...") for the log
};

// Environment changes for NCCL's log; call before the NCCL communicator exists. The user's
// NCCL_DEBUG_FILE is kept (its %h and %p expanded as NCCL does); NCCL_DEBUG below INFO is raised
// only when a transport is required (otherwise the network is reported as not verified).
NcclLogPlan prepare_nccl_log(const std::string& output_dir, int rank, bool transport_required);

// Parses this rank's log, logs the network, and with `required` set fails every rank (the
// decision is agreed over the comm, so no rank waits in a collective for one that left) with
// ValidationRefused when any rank's NCCL used another network or the log does not say.
void check_nccl_transport(const NcclLogPlan& plan, const std::optional<std::string>& required,
                          Comm& comm, const TrainLog& log);

// Pure: what this rank's NCCL log says about a failed collective, as text (the failure, what it
// means, the likely causes in order, the fix, who said it first, the consequences; the same
// classifier and renderer as `fabcheck nccl-log`). Empty when the log names no failure.
std::string explain_nccl_log(const std::string& log_text, const std::string& file);

// After a collective failed: this rank's NCCL log (plan.file) explained, or "" when there is no
// log or it names no failure.
std::string explain_nccl_failure(const NcclLogPlan& plan);

// Pure: the verdict for one log text. Empty when `required` is met (or not set).
std::string transport_mismatch(const std::string& log_text,
                               const std::optional<std::string>& required,
                               std::string* summary_line);

}  // namespace fabkit::trainer
