#include "slurm/group_rule.h"

namespace fabkit::slurm {

bool group_run_positive(const GroupRunFigure& run, double threshold_gbit_s) {
  return run.failed || (run.min_busbw_gbps && *run.min_busbw_gbps * 8 < threshold_gbit_s);
}

bool group_needs_second_run(const GroupRunFigure& first, double threshold_gbit_s) {
  return !first.failed && group_run_positive(first, threshold_gbit_s);
}

GroupAnswer group_answer(const GroupRunFigure& first, const std::optional<GroupRunFigure>& second,
                         double threshold_gbit_s) {
  GroupAnswer a{group_run_positive(first, threshold_gbit_s), first.min_busbw_gbps};
  if (!second || !group_needs_second_run(first, threshold_gbit_s)) return a;
  if (second->failed) return a;  // slow, then failed: still positive, the slow figure kept
  if (second->min_busbw_gbps && (!a.min_busbw_gbps || *second->min_busbw_gbps > *a.min_busbw_gbps))
    a.min_busbw_gbps = second->min_busbw_gbps;
  a.positive = group_run_positive({false, a.min_busbw_gbps}, threshold_gbit_s);
  return a;
}

}  // namespace fabkit::slurm
