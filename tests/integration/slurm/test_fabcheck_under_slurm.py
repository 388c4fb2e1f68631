"""fabcheck node as a Slurm pre-flight check on a real 2-node Slurm cluster (netns hosts).

Proves: srun runs fabcheck on each node; each node's report describes that node's own network
(its 198.18.x address, not the other's); a finding at warn or worse turns into a non-zero task
exit that srun and `sbatch --wait` propagate, which is what a prolog/health check relies on.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slurm_cluster import SlurmCluster  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
from json_schemas import validate_doc  # noqa: E402

FABCHECK = None


class FabcheckUnderSlurm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = SlurmCluster(nodes=2).start()
        cls.out = tempfile.mkdtemp(prefix="fabkit-slurm-out-")

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()
        shutil.rmtree(cls.out, ignore_errors=True)

    def _node_reports(self, extra_env=None, tag="a"):
        script = ('%s node --json > %s/%s-$SLURMD_NODENAME.json; echo $? > %s/%s-$SLURMD_NODENAME.rc'
                  % (FABCHECK, self.out, tag, self.out, tag))
        r = self.cluster.run(["srun", "-N2", "-n2", "bash", "-c", script], extra_env=extra_env)
        self.assertEqual(r.returncode, 0, r.stderr + self.cluster.logs())
        reports = {}
        for node in self.cluster.node_names:
            with open(os.path.join(self.out, "%s-%s.json" % (tag, node))) as f:
                text = f.read()
            with open(os.path.join(self.out, "%s-%s.rc" % (tag, node))) as f:
                rc = int(f.read())
            reports[node] = (json.loads(text), rc, text)
            validate_doc(reports[node][0], "node.schema.json")  # docs/schema/
        return reports

    def test_each_node_reports_its_own_interface(self):
        reports = self._node_reports()
        for node, (rep, rc, text) in reports.items():
            self.assertTrue(text.lstrip().startswith('{\n  "schema_version"'), text[:80])
            self.assertEqual(rep["kind"], "node")
            self.assertEqual(rc, rep["summary"]["exit_code"])
            addrs = [a["address"] for i in rep["net"]["interfaces"] for a in i["addresses"]]
            self.assertIn(self.cluster.node_addrs[node], addrs, node)
            other = [n for n in self.cluster.node_names if n != node][0]
            self.assertNotIn(self.cluster.node_addrs[other], addrs, node)

    def test_failing_check_fails_the_step(self):
        # An NCCL_SOCKET_IFNAME that matches nothing is a failure finding -> exit 1 on every node.
        env = {"NCCL_SOCKET_IFNAME": "=doesnotexist0"}
        script = "%s node >/dev/null" % FABCHECK
        r = self.cluster.run(["srun", "-N2", "-n2", "bash", "-c", script], extra_env=env)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        reports = self._node_reports(extra_env=env, tag="b")
        for node, (rep, rc, _) in reports.items():
            self.assertEqual(rc, 1)
            codes = [f["code"] for f in rep["findings"] if f["severity"] == "fail"]
            self.assertTrue(codes, "no failure finding on %s" % node)

    def test_sbatch_wait_propagates_the_exit_code(self):
        batch = os.path.join(self.out, "preflight.sbatch")
        with open(batch, "w") as f:
            # --since 0s: the host's kernel log before the check (shared by both netns nodes) is
            # not this test's to judge; the exit must come from what the test sets.
            f.write("#!/bin/bash\n#SBATCH -N2\n#SBATCH -o %s/preflight-%%j.out\n"
                    "srun -N2 -n2 %s node --json --since 0s >/dev/null\n" % (self.out, FABCHECK))
        ok = self.cluster.run(["sbatch", "--wait", batch])
        self.assertEqual(ok.returncode, 0, ok.stdout + ok.stderr + self.cluster.logs())
        bad = self.cluster.run(["sbatch", "--wait", "--export=ALL,NCCL_SOCKET_IFNAME==nosuch9", batch])
        self.assertNotEqual(bad.returncode, 0, bad.stdout + bad.stderr)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabcheck", required=True)
    args, rest = ap.parse_known_args()
    FABCHECK = os.path.abspath(args.fabcheck)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
