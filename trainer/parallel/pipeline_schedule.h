// Pipeline schedules as data: for one stage of S, the ordered list of what it does in one step
// with M micro-batches (forward, backward, and the sends and receives between neighbouring
// stages). Pure and torch-free, so every schedule is unit-tested (pipeline_schedule_test.cc)
// before a rank runs it (pipeline_runner.h executes the list).
//
// Why the order of sends and receives matters: Comm::send blocks until its transfer completes,
// and the lists assume the strictest backend behaviour, that a send may not complete before the
// peer posts the matching receive (NCCL's point-to-point pairs up that way; whether a Gloo send
// is buffered depends on its transport and size, so it is not relied on). Then two neighbours
// that both send first wait for each other forever, and a fixed rule (even/odd stages send first)
// still deadlocks GPipe at the turn from forwards to backwards for 3 stages and more (found by the
// test). So the lists are made by playing all stages together and recording the order in which
// the transfers could complete; every list is then checked under rendezvous semantics (a send
// and its receive complete together, simulate_rendezvous()) for S <= 8, M <= 12.
//
// GPipe: all M forwards, then all M backwards (in reverse order): every stage holds the
// activations of all M micro-batches at the turn. 1F1B (PipeDream-flush, Megatron's default):
// stage s runs min(S-1-s, M) warm-up forwards, then alternates one forward and one backward,
// then drains the remaining backwards: it holds at most min(S-s, M) micro-batches' activations.
// Both have the same bubble, (S-1)/(M+S-1) of the step, and the same gradients (micro-batch
// gradients are summed, so their order only reorders fp32 additions).
#pragma once

#include <string>
#include <vector>

namespace fabkit::trainer {

enum class PipeSchedule { kGPipe, k1F1B };

// "gpipe" | "1f1b"; throws UsageError naming the value and the choices.
PipeSchedule parse_pipe_schedule(const std::string& name);
std::string to_string(PipeSchedule s);

enum class PipeOp {
  kRecvActivation,  // from stage - 1: the input of forward(mb)
  kForward,
  kSendActivation,  // to stage + 1
  kRecvGrad,        // from stage + 1: the gradient of forward(mb)'s output
  kBackward,
  kSendGrad,  // to stage - 1: the gradient of forward(mb)'s input
};
std::string to_string(PipeOp op);

struct PipeAction {
  PipeOp op;
  int micro_batch;
  bool operator==(const PipeAction& o) const { return op == o.op && micro_batch == o.micro_batch; }
};

// The actions of every stage (0-based) in one step of `micro_batches`, and of one stage.
std::vector<std::vector<PipeAction>> make_pipe_schedules(PipeSchedule kind, int stages,
                                                         int micro_batches);
std::vector<PipeAction> make_pipe_schedule(PipeSchedule kind, int stage, int stages,
                                           int micro_batches);

// Runs every stage's list together, a send completing only with its matching receive (same
// neighbour pair, kind and micro-batch). Returns "" when every list ran to its end, else what
// blocked (each stage's next action), or the first mismatched pair.
std::string simulate_rendezvous(const std::vector<std::vector<PipeAction>>& per_stage);

// The most micro-batches whose forward has run and whose backward has not, at any point of the
// list: how many micro-batches' activations the stage holds at its peak.
int peak_in_flight(const std::vector<PipeAction>& actions);

// The idle share of a step when every forward and backward of a stage costs the same:
// (S-1)/(M+S-1), for GPipe and 1F1B alike.
double bubble_fraction(int stages, int micro_batches);

// Point-to-point tag of one transfer: tags from 2^30 up belong to the comm backend (comm.h).
int pipe_tag(PipeOp op, int micro_batch);

}  // namespace fabkit::trainer
