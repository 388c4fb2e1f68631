"""run_bench.py's verdict on issue #11's goal (fabkit >= 0.9x raw at every size), without netns:
the median over sizes must not hide one slow size, and a size that never ran is not a pass."""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_bench  # noqa: E402

SIZES = [8, 32 << 10, 128 << 10, 1 << 20, 64 << 20]


class GoalVerdict(unittest.TestCase):
    def test_every_size_at_the_goal_is_met(self):
        v = run_bench.goal_verdict(SIZES, [1.0, 0.95, 0.93, 0.97, 0.9])
        self.assertIn("lowest per-size fabkit/raw = 0.900 at 64 MiB", v)
        self.assertIn("at every size: met", v)

    def test_one_slow_size_fails_although_the_median_is_high(self):
        v = run_bench.goal_verdict(SIZES, [0.98, 0.97, 0.84, 0.99, 0.96])
        self.assertIn("NOT met at 128 KiB", v)
        self.assertIn("lowest per-size fabkit/raw = 0.840 at 128 KiB", v)
        self.assertIn("median over sizes 0.970", v)

    def test_a_size_without_a_figure_is_not_a_pass(self):
        v = run_bench.goal_verdict(SIZES, [0.98, math.nan, 0.95, 0.99, 0.96])
        self.assertIn("NOT met at 32 KiB", v)
        self.assertIn("lowest per-size fabkit/raw = 0.950 at 128 KiB", v)
        v = run_bench.goal_verdict(SIZES[:1], [math.nan])
        self.assertIn("no size was measured", v)
        self.assertIn("NOT met", v)


if __name__ == "__main__":
    unittest.main(verbosity=2)
