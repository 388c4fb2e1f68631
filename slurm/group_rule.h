// When a group test of the bad-link search (slurm/link_search.h) is positive: the one rule that
// the real search (slurm/search_runner.cc, ring all-reduces over the group's agents) and the
// fabric simulator (slurm/sim/) both apply, so the simulator's tables judge groups as the command
// does. Pure.
#pragma once

#include <optional>

namespace fabkit::slurm {

// One run of a group test: every ring order's all-reduce, or a failure.
struct GroupRunFigure {
  bool failed = false;                   // a step or a ring run failed
  std::optional<double> min_busbw_gbps;  // the slowest ring's busbw, GB/s (fabkit-socket)
};

// A run is positive when it failed or its slowest ring's busbw (x 8: Gbit/s) is below the bar
// (--search-fraction x the matrix's healthy TCP figure).
bool group_run_positive(const GroupRunFigure& run, double threshold_gbit_s);

// A run that was slow without failing is measured once more (noise on a shared machine only ever
// slows a run; a bad link is slow every time).
bool group_needs_second_run(const GroupRunFigure& first, double threshold_gbit_s);

struct GroupAnswer {
  bool positive = false;
  std::optional<double> min_busbw_gbps;  // the figure the answer rests on: the faster of the two
};

// The group's answer from its first run and, when group_needs_second_run, its second: a second
// run that failed keeps the first (slow) figure and the group positive; otherwise the faster of
// the two figures is held to the bar.
GroupAnswer group_answer(const GroupRunFigure& first, const std::optional<GroupRunFigure>& second,
                         double threshold_gbit_s);

}  // namespace fabkit::slurm
