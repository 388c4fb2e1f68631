"""The same output-path mistake gets the same answer in every fabcheck command (issue #22): a
file in a directory that does not exist is a usage error (exit 2) naming the command's own flag
and the path, given before any work starts (a cluster run with agents that would take minutes
answers within seconds), and no file is left behind.

Run: test_output_paths.py FABCHECK
"""
import os
import subprocess
import sys
import tempfile
import time
import unittest

FABCHECK = None
# A launcher that would hold each agent start for 5 minutes: a command that checks its output
# paths after starting agents cannot answer within the bound below.
SLOW_LAUNCHER = "sleep 300 {host}"
BOUND_S = 20


def run(argv, timeout=120):
    t0 = time.monotonic()
    p = subprocess.run([FABCHECK] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout, stdin=subprocess.DEVNULL)
    return p, time.monotonic() - t0


class OutputPaths(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.missing = os.path.join(self.tmp.name, "no-such-dir")

    def tearDown(self):
        self.tmp.cleanup()

    def assert_refused(self, argv, flag):
        path = os.path.join(self.missing, "out")
        p, took = run(argv + [flag, path])
        self.assertEqual(p.returncode, 2, f"{argv} {flag}: exit {p.returncode}\n{p.stderr}{p.stdout}")
        self.assertIn(flag + " " + path, p.stderr + p.stdout)
        self.assertIn("does not exist", p.stderr + p.stdout)
        self.assertLess(took, BOUND_S, f"{argv} {flag}: answered after {took:.1f} s")
        self.assertFalse(os.path.exists(self.missing))

    def test_node(self):
        for flag in ("--prom", "--html", "--nvml-record"):
            with self.subTest(flag=flag):
                self.assert_refused(["node", "--no-progress"], flag)

    def test_cluster_refuses_before_starting_agents(self):
        hosts = ["fab-op-a", "fab-op-b"]
        for flag in ("--json-out", "--profile-out", "--prom"):
            with self.subTest(flag=flag):
                self.assert_refused(["cluster", *hosts, "--launcher", SLOW_LAUNCHER,
                                     "--no-progress"], flag)

    def test_pair_refuses_before_starting_agents(self):
        self.assert_refused(["pair", "fab-op-a", "fab-op-b", "--launcher", SLOW_LAUNCHER,
                             "--no-progress"], "--html")

    def test_profile_and_emit_env(self):
        self.assert_refused(["profile"], "--out")
        self.assert_refused(["emit-env"], "--out")

    def test_report(self):
        doc = os.path.join(self.tmp.name, "node.json")
        p, _ = run(["node", "--json", "--no-progress"])
        self.assertIn(p.returncode, (0, 1), p.stderr)
        with open(doc, "w") as f:
            f.write(p.stdout)
        for flag in ("--html", "--prom"):
            with self.subTest(flag=flag):
                self.assert_refused(["report", doc], flag)


if __name__ == "__main__":
    FABCHECK = sys.argv.pop(1)
    unittest.main(verbosity=2)
