// Pipeline schedules as data: for each rank of P, the ordered list of what it does in one step
// with M micro-batches: forwards, backwards (whole, or split into an input-gradient pass and a
// weight-gradient pass), and the sends and receives between neighbouring virtual stages. Pure and
// torch-free, so every schedule is generated, validated and timed (pipeline_schedule_test.cc)
// before a rank runs it (pipeline_runner.h executes the list).
//
// Virtual stages: with V chunks per rank (interleaved 1F1B), the model's layers are split into
// P x V virtual stages; virtual stage g = chunk x P + rank, so chunk c of rank r hands its output
// to virtual stage g + 1: rank (r + 1) mod P, chunk c (or c + 1 when r is the last rank). The
// other schedules have V = 1 (chunk 0 everywhere).
//
// Why the order of sends and receives matters: Comm::send blocks until its transfer completes,
// and the lists assume the strictest backend behaviour, that a send may not complete before the
// peer posts the matching receive (NCCL's point-to-point pairs up that way; whether a Gloo send
// is buffered depends on its transport and size, so it is not relied on). Then two neighbours
// that both send first wait for each other forever, and a fixed rule (even/odd stages send first)
// still deadlocks GPipe at the turn from forwards to backwards for 3 stages and more (found by the
// test). So the lists are made by playing all ranks together and recording the order in which
// the transfers could complete; every list is then checked under rendezvous semantics (a send
// and its receive complete together, simulate_rendezvous()). Interleaving closes a ring (rank 0
// sends gradients back to rank P-1), so there a few sends come after the rank's next computation
// (pipeline_schedule.cc says why); the runner posts every send as soon as its computation ends
// (pipeline_runner.cc), so none waits for that.
//
// GPipe: all M forwards, then all M backwards (in reverse order). 1F1B (PipeDream-flush,
// Megatron's default): rank s runs min(P-1-s, M) warm-up forwards, then alternates one forward and
// one backward, then drains the remaining backwards. Interleaved 1F1B: Megatron's virtual-pipeline
// schedule (M a multiple of P), bubble (P-1)/(V*M+P-1). ZB-H1 (zero-bubble, Qi et al.): 1F1B's
// order with each backward split into B (input gradient, on the critical path) and W (weight
// gradient), rank r running each W r micro-batches after its B, so the W passes fill what would
// be 1F1B's drain; 1F1B's peak activation memory (every rank holds what 1F1B's rank 0 holds).
#pragma once

#include <string>
#include <vector>

namespace fabkit::trainer {

enum class PipeSchedule { kGPipe, k1F1B, kInterleaved1F1B, kZBH1 };

// "gpipe" | "1f1b" | "interleaved-1f1b" | "zb-h1"; throws UsageError naming the value and the
// choices.
PipeSchedule parse_pipe_schedule(const std::string& name);
std::string to_string(PipeSchedule s);

enum class PipeOp {
  kRecvActivation,  // from the previous virtual stage: the input of forward(mb, chunk)
  kForward,
  kSendActivation,  // to the next virtual stage
  kRecvGrad,        // from the next virtual stage: the gradient of forward(mb, chunk)'s output
  kBackward,        // the whole backward: input and weight gradients
  kSendGrad,        // to the previous virtual stage: the gradient of forward(mb, chunk)'s input
  kBackwardInput,   // B of a split backward: the input gradient only (what kSendGrad sends)
  kBackwardWeight,  // W of a split backward: the weight gradients, after its B
};
std::string to_string(PipeOp op);
bool is_compute(PipeOp op);
// The op the peer posts for the same transfer (send_act <-> recv_act, send_grad <-> recv_grad).
PipeOp pipe_matching_op(PipeOp op);

struct PipeAction {
  PipeOp op;
  int micro_batch;
  int chunk = 0;
  bool operator==(const PipeAction& o) const {
    return op == o.op && micro_batch == o.micro_batch && chunk == o.chunk;
  }
};
// "send_act(3)", "forward(3, chunk 1)": what validation and deadlock messages name.
std::string to_string(const PipeAction& a);

struct PipeShape {
  int ranks = 1;          // P: pipeline ranks (--pp)
  int micro_batches = 1;  // M
  int chunks = 1;         // V: model chunks per rank (--virtual-stages; 1 unless interleaved)
  int virtual_stages() const { return ranks * chunks; }
};

// UsageError naming the value and the fix when `kind` cannot run `shape` (interleaved: V >= 2,
// P >= 2 and M a multiple of P; the others: V = 1).
void check_pipe_shape(PipeSchedule kind, const PipeShape& shape);

// The actions of every rank (0-based) in one step, and of one rank. Calls check_pipe_shape.
std::vector<std::vector<PipeAction>> make_pipe_schedules(PipeSchedule kind, const PipeShape& shape);
std::vector<PipeAction> make_pipe_schedule(PipeSchedule kind, int rank, const PipeShape& shape);
// V = 1 shorthands (GPipe, 1F1B, ZB-H1).
std::vector<std::vector<PipeAction>> make_pipe_schedules(PipeSchedule kind, int stages,
                                                         int micro_batches);
std::vector<PipeAction> make_pipe_schedule(PipeSchedule kind, int stage, int stages,
                                           int micro_batches);

// The other end of a communication action of `rank`: its rank and chunk, and the boundary's
// lower virtual stage (g for the transfer between virtual stages g and g + 1). rank -1 when there
// is no such virtual stage (a receive of activations on virtual stage 0, ...). Throws
// InternalError for a computation.
struct PipePeer {
  int rank = -1;
  int chunk = 0;
  int boundary = 0;
};
PipePeer pipe_peer(const PipeShape& shape, int rank, const PipeAction& a);

// Runs every rank's list together, a send completing only with its matching receive (same
// boundary, direction and micro-batch). Returns "" when every list ran to its end, else what
// blocked ("rank 0 waits at send_act(0); rank 1 waits at send_grad(0)"), or the first pair that
// faces each other on one boundary and direction with different micro-batches ("... met ...":
// their tags differ, so both would wait). The V = 1 overload takes M from the lists.
std::string simulate_rendezvous(const std::vector<std::vector<PipeAction>>& per_rank,
                                const PipeShape& shape);
std::string simulate_rendezvous(const std::vector<std::vector<PipeAction>>& per_stage);  // V = 1

// Everything a rank must be able to rely on before it runs a list: every (micro-batch, chunk)
// forwarded once and backpropagated once (kBackward, or kBackwardInput then kBackwardWeight)
// after its forward; a receive before the computation that uses it and a send after the one that
// produces it; no deadlock (simulate_rendezvous). "" or the first violation, naming the rank and
// the action; a deadlock's reason starts "deadlock: ". make_pipe_schedules' lists pass by
// construction; the runner checks again.
std::string validate_pipe_schedules(const std::vector<std::vector<PipeAction>>& per_rank,
                                    const PipeShape& shape);

// The most (micro-batch, chunk) forwards whose activations are still held, at any point of the
// list: forwarded and not yet fully backpropagated (a split backward holds the weight pass's
// inputs until its W).
int peak_in_flight(const std::vector<PipeAction>& actions);

// The idle share of a step in theory: (P-1)/(M+P-1) for GPipe and 1F1B (any F:B ratio),
// (P-1)/(V*M+P-1) interleaved (a chunk costs 1/V of a stage), ZB-H1 (P-1)/(3M+P-1), the
// zero-bubble paper's figure for F = B = W (M >= P; see pipeline_schedule_check.cc).
double bubble_fraction(int stages, int micro_batches);
double bubble_fraction(PipeSchedule kind, const PipeShape& shape);

// Point-to-point tag of one transfer: 2 x (mb x P*V + boundary) (+1 for gradients), unique per
// transfer of a step and below 2^30 (the comm backend's tags, comm.h) when
// pipe_tags_fit(shape) (check_pipe_shape refuses a shape whose tags do not fit).
int pipe_tag(const PipeShape& shape, PipeOp op, int micro_batch, int boundary);
bool pipe_tags_fit(const PipeShape& shape);

// A timeline of one step, every rank's computations placed as early as the lists and the
// transfers allow, with unit costs (forward, backward input, backward weight; a whole backward
// costs B + W; transfers take no time). The bubble is what is left idle.
struct PipeCosts {
  double forward = 1, backward_input = 1, backward_weight = 1;
};
struct PipeSlot {
  PipeAction action;
  double start = 0, end = 0;
};
struct PipeTimeline {
  std::vector<std::vector<PipeSlot>> per_rank;  // computations only, in list order
  double makespan = 0;
  double bubble = 0;  // idle share: 1 - busy / (P x makespan)
};
PipeTimeline simulate_timeline(const std::vector<std::vector<PipeAction>>& per_rank,
                               const PipeShape& shape, const PipeCosts& costs = {});
// Throws InternalError if a list waits forever (validate first).
//
// One line per rank, "rank r |" then one column per unit of time, the unit being the shortest
// computation in the timeline (so F = 1, B = 2 gives a backward two columns); each column holds
// the label of the computation running then, repeated across its columns, padded to the longest
// label: "F0" forward of micro-batch 0 (with V = 2, chunk 1 is lower case: "f0"; with V > 2
// every label carries its chunk: "F0.2"), "B0" backward (whole or input), "W0" weight pass,
// "." idle. Trailing spaces are trimmed.
std::string render_timeline_text(const PipeTimeline& t, const PipeShape& shape);
// The same timeline as a self-contained HTML page (no script, no external file): one table row
// per rank, one cell per computation spanning its columns, coloured by kind (forward, input
// gradient, weight gradient, whole backward; later chunks lighter), the makespan and bubble above.
std::string render_timeline_html(const PipeTimeline& t, const PipeShape& shape,
                                 const std::string& title);

}  // namespace fabkit::trainer
