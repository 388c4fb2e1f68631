"""docs/containers.md shows emit-env's real output for tests/fixtures/profile/cluster-roce.json
(host roce-a): the docker argument line and the apptainer export lines must still match what the
binary prints, so the page cannot drift from the emitters.
"""
import argparse
import os
import subprocess
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FABCHECK = None
PROFILE = os.path.join(ROOT, "tests", "fixtures", "profile", "cluster-roce.json")


def emit(fmt):
    r = subprocess.run([FABCHECK, "emit-env", "--profile", PROFILE, "--host", "roce-a", "--format", fmt],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


class ContainersDoc(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(ROOT, "docs", "containers.md")) as f:
            self.doc = f.read()

    def test_docker_line_matches(self):
        line = emit("docker").strip()
        self.assertIn("--network host", line)
        self.assertIn("\n" + line + "\n", self.doc)

    def test_apptainer_exports_match(self):
        lines = [l for l in emit("apptainer").splitlines() if l and not l.startswith("#")]
        self.assertTrue(any(l.startswith("export APPTAINERENV_NCCL_IB_HCA=") for l in lines), lines)
        self.assertIn("\n" + "\n".join(lines) + "\n", self.doc)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabcheck", required=True)
    args, rest = ap.parse_known_args()
    FABCHECK = os.path.abspath(args.fabcheck)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
