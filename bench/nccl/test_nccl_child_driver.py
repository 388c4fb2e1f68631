#!/usr/bin/env python3
"""nccl_child_driver.py against fake runners (shell scripts speaking the child protocol on fd 3),
so the driver's reading and its deadlines are checked without NCCL or a GPU. The case that
matters: a child that writes PROGRESS and RESULT in one write and stays alive (as a runner does
while NCCL tears its communicator down) must be read at once, not at the deadline.

usage: test_nccl_child_driver.py"""
import os
import stat
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import nccl_child_driver  # noqa: E402

RESULT = '{"sizes":[{"bytes":1048576,"correct":true,"algbw_gbps":1.0}],"nccl_version":22809}'
WRONG = '{"sizes":[{"bytes":1048576,"correct":false,"algbw_gbps":1.0}],"nccl_version":22809}'


class Driver(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="fabkit-driver-test-")

    def tearDown(self):
        self.dir.cleanup()

    def runner(self, body):
        """A fake fabcheck-nccl-runner: READY with an id, then BODY once GO has come."""
        path = os.path.join(self.dir.name, "runner")
        with open(path, "w") as f:
            f.write("#!/bin/bash\n"
                    "printf 'READY %s\\n' 00ab >&3\n"
                    "read -r word uid || exit 9\n"
                    "[ \"$word\" = GO ] && [ \"$uid\" = 00ab ] || { echo \"got '$word $uid'\"; exit 8; }\n"
                    + body + "\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def drive(self, body, ranks=1, timeout_ms=4000):
        start = time.monotonic()
        out = nccl_child_driver.run(self.runner(body), ranks, [1048576], timeout_ms=timeout_ms,
                                    base_env=dict(os.environ))
        return out, time.monotonic() - start

    def test_lines_written_together_while_the_child_lives_on_are_read_at_once(self):
        # Before: the buffered readline took PROGRESS 2 and RESULT into its buffer with PROGRESS 1,
        # select() saw nothing more on the pipe, and the rank timed out at the deadline although
        # its RESULT had come (a runner lives on after RESULT while NCCL tears down).
        out, took = self.drive(f"printf 'PROGRESS 1\\nPROGRESS 2\\nRESULT %s\\n' '{RESULT}' >&3; sleep 20",
                               timeout_ms=3000)
        self.assertEqual([r["status"] for r in out], ["ok"], out)
        self.assertEqual(out[0]["result"]["nccl_version"], 22809)
        # The driver still bounds its wait for the exit (then kills): about 3 s, not 20.
        self.assertLess(took, 10)

    def test_two_ranks_each_with_its_result(self):
        out, _ = self.drive(f"printf 'PROGRESS 1\\nRESULT %s\\n' '{RESULT}' >&3", ranks=2)
        self.assertEqual([r["status"] for r in out], ["ok", "ok"], out)
        self.assertEqual([r["rank"] for r in out], [0, 1])

    def test_wrong_sums_fail(self):
        out, _ = self.drive(f"printf 'RESULT %s\\n' '{WRONG}' >&3")
        self.assertEqual(out[0]["status"], "failed")
        self.assertEqual(out[0]["reason"], "wrong sums")

    def test_a_child_that_exits_without_a_result_says_so(self):
        out, took = self.drive("echo 'NCCL WARN something' ; exit 3")
        self.assertEqual(out[0]["status"], "failed")
        self.assertEqual(out[0]["reason"], "the child exited without a result")
        self.assertIn("NCCL WARN something", out[0]["log_tail"])
        self.assertLess(took, 3.9)

    def test_a_silent_child_is_a_timeout_at_the_deadline(self):
        out, took = self.drive("sleep 30", timeout_ms=1500)
        self.assertEqual(out[0]["status"], "failed")
        self.assertEqual(out[0]["reason"], "timeout waiting for the child")
        self.assertGreaterEqual(took, 1.4)
        self.assertLess(took, 10)

    def test_a_last_line_without_newline_is_still_read(self):
        out, _ = self.drive(f"printf 'FAILED nccl ncclCommInitRank: unhandled system error' >&3")
        self.assertEqual(out[0]["status"], "failed")
        self.assertEqual(out[0]["reason"], "nccl ncclCommInitRank: unhandled system error")

    def test_unavailable_before_ready_stops_the_ranks(self):
        path = os.path.join(self.dir.name, "unavailable")
        with open(path, "w") as f:
            f.write("#!/bin/bash\nprintf 'UNAVAILABLE no CUDA device/driver: test\\n' >&3\n"
                    "read -r word; [ \"$word\" = STOP ] || exit 7\n")
        os.chmod(path, 0o755)
        out = nccl_child_driver.run(path, 1, [1048576], timeout_ms=4000, base_env=dict(os.environ))
        self.assertEqual(out[0]["status"], "unavailable")
        self.assertEqual(out[0]["reason"], "no CUDA device/driver: test")


if __name__ == "__main__":
    unittest.main(verbosity=2)
