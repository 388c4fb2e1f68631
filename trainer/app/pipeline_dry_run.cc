// fabtrain train --dry-run (pipeline_engine.h): the schedule as the ranks would run it, before
// anything is loaded or launched.
#include <iostream>
#include <sstream>

#include "common/errors.h"
#include "common/output_file.h"
#include "trainer/app/pipeline_engine.h"

namespace fabkit::trainer {

std::string pipeline_schedule_report(PipeSchedule kind, const PipeShape& shape) {
  const auto lists = make_pipe_schedules(kind, shape);
  const std::string bad = validate_pipe_schedules(lists, shape);
  // The generator's lists are valid by construction; were one not, no rank may run it.
  if (!bad.empty())
    throw UsageError("pipeline schedule " + to_string(kind) + " is invalid: " + bad);
  // Costs per rank's share of the layers: forward, input gradient and weight gradient 1 each; a
  // chunk of an interleaved rank is 1/V of that share, so makespans compare across schedules.
  PipeCosts costs;
  costs.forward = costs.backward_input = costs.backward_weight = 1.0 / shape.chunks;
  const PipeTimeline t = simulate_timeline(lists, shape, costs);
  std::ostringstream out;
  out << "pipeline schedule " << to_string(kind) << ": " << shape.ranks << " ranks, "
      << shape.micro_batches << " micro-batches, " << shape.chunks << " model chunk"
      << (shape.chunks > 1 ? "s" : "") << " per rank (" << shape.virtual_stages()
      << " virtual stages)\n"
      << "checked: every send meets its receive in an order no rank waits on forever, every "
         "micro-batch forwarded and backpropagated once per virtual stage\n"
      << "timeline, a forward, input-gradient and weight-gradient pass over a rank's layers 1 "
         "unit each (a whole backward 2; an interleaved chunk's 1/V):\n"
      << render_timeline_text(t, shape) << "makespan " << t.makespan << " units; bubble "
      << t.bubble << " (equal-cost theory " << bubble_fraction(kind, shape) << ")\n"
      << "activations held at most (micro-batch chunks):";
  for (int r = 0; r < shape.ranks; ++r)
    out << (r ? "," : "") << " rank " << r << ": " << peak_in_flight(lists[static_cast<size_t>(r)]);
  out << "\n";
  return out.str();
}

int print_pipeline_dry_run(const TrainOptions& o) {
  const PipeSchedule kind = parse_pipe_schedule(o.schedule);
  const PipeShape shape = pipeline_shape(o);
  if (!o.timeline_html.empty()) check_output_path("--timeline-html", o.timeline_html);
  std::string out = pipeline_schedule_report(kind, shape);
  if (!o.timeline_html.empty()) {
    const auto lists = make_pipe_schedules(kind, shape);
    PipeCosts costs;
    costs.forward = costs.backward_input = costs.backward_weight = 1.0 / shape.chunks;
    write_output_file(
        "--timeline-html", o.timeline_html,
        render_timeline_html(simulate_timeline(lists, shape, costs), shape, to_string(kind)));
    out += "timeline written to " + o.timeline_html + "\n";
  }
  std::cout << out;
  return 0;
}

}  // namespace fabkit::trainer
