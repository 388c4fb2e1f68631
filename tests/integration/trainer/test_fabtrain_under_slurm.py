"""fabtrain launched by a real Slurm (slurm-wlm + munge started by the test):
- one node: `srun -N1 -n2 fabtrain ...` gives each task SLURM_PROCID/SLURM_NTASKS/
  SLURM_JOB_NODELIST and no RANK/MASTER_ADDR; fabtrain must take the master from the nodelist,
  rendezvous over Gloo and train, and the result must equal a 1-process run on the same global
  batch;
- two nodes, each slurmd in its own network namespace: one task per node, so each is local rank
  0 of 1 on its node and Gloo runs between the namespaces over the test's bridge. The node
  names do not resolve (they exist only in slurm.conf), so MASTER_ADDR gives the master's
  address, as a site without DNS for its nodes would; neither sets GLOO_SOCKET_IFNAME (the
  interface names differ per node), so each rank must bind where its routing table reaches the
  master, not where the host name resolves (the host's own network, unreachable from inside).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "slurm"))
from slurm_cluster import SlurmCluster  # noqa: E402
from tiny_inputs import write_inputs  # noqa: E402

FABTRAIN = None


def losses(out):
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [json.loads(l)["loss"] for l in f if l.strip()]


class FabtrainUnderSlurm(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="fabtrain-slurm-")
        write_inputs(self.dir, 24)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def args(self, out, mb):
        return [FABTRAIN, "--model", os.path.join(self.dir, "model"), "--data",
                os.path.join(self.dir, "train.jsonl"), "--output", os.path.join(self.dir, out),
                "--max-length", "16", "--max-steps", "3", "--lr", "3e-3", "--micro-batch-size", str(mb),
                "--rendezvous-timeout-ms", "30000", "--collective-timeout-ms", "30000",
                # Gloo ranks on CPU, also on a machine with a GPU (--device auto would take it)
                "--device", "cpu"]

    def assert_equals_one_process(self, out):
        """The 2-rank run `out` (micro-batch 2 per rank) equals one process on the same global
        batch (micro-batch 4): the loss curve to 1e-4 relative (fp32 sums reordered by Gloo)."""
        one = subprocess.run(self.args(out + "-one", 4), capture_output=True, text=True, timeout=240)
        self.assertEqual(one.returncode, 0, one.stderr)
        a, b = losses(os.path.join(self.dir, out)), losses(os.path.join(self.dir, out + "-one"))
        self.assertEqual(len(a), 3)
        for x, y in zip(a, b):
            self.assertAlmostEqual(x, y, delta=1e-4 * abs(y))

    def test_srun_two_tasks_equal_one_process(self):
        with SlurmCluster(nodes=1) as c:
            r = c.run(["srun", "-N1", "-n2", "--kill-on-bad-exit=1"] + self.args("srun", 2), timeout_s=240,
                      extra_env={"MASTER_PORT": str(30000 + os.getpid() % 20000)})
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr + c.logs())
        self.assertIn("launcher slurm", r.stderr)
        self.assertIn("rank 0/2", r.stderr)
        self.assertIn("master " + os.uname().nodename, r.stderr)
        self.assert_equals_one_process("srun")

    def test_srun_across_two_nodes_equals_one_process(self):
        with SlurmCluster(nodes=2) as c:
            master = c.node_addrs["node1"]
            r = c.run(["srun", "-N2", "-n2", "--ntasks-per-node=1", "--kill-on-bad-exit=1"] + self.args("two", 2),
                      timeout_s=240, extra_env={"MASTER_ADDR": master, "MASTER_PORT": str(30000 + os.getpid() % 20000)})
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr + c.logs())
        self.assertIn("launcher slurm", r.stderr)
        self.assertIn("rank 0/2, local 0/1, master %s:" % master, r.stderr)
        self.assertIn("transport tcp via %s (this host's route to MASTER_ADDR %s" % (master, master), r.stderr)
        self.assert_equals_one_process("two")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--fabtrain", required=True)
    a, rest = p.parse_known_args()
    FABTRAIN = a.fabtrain
    unittest.main(argv=[sys.argv[0]] + rest)
