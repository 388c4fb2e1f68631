"""slurm/fabtrain.sbatch on a real 2-node Slurm (slurm_cluster.py; each slurmd in its own network
namespace): the job is signalled the way Slurm does it before a time limit (USR1 to the batch
shell: `scancel --batch --signal=USR1`, what `--signal=B:USR1@120` sends), fabtrain checkpoints
and stops, the template requeues the job, and the restarted job resumes from that checkpoint and
finishes. The loss of every step (the last record of a step counts: steps after the checkpoint
appear twice in metrics.jsonl) equals an uninterrupted run's.

Run: test_fabtrain_sbatch.py --fabtrain PATH   (root)
"""
import argparse
import json
import os
import re
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from slurm_cluster import SlurmCluster  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "trainer"))
from tiny_inputs import write_inputs  # noqa: E402

FABTRAIN = None
TEMPLATE = os.path.join(HERE, "..", "..", "..", "slurm", "fabtrain.sbatch")
STEPS = 40


def step_losses(out):
    """{step: loss}, the last record of each step (a resumed run repeats the steps after its
    checkpoint; the second record is the one that counted)."""
    path = os.path.join(out, "metrics.jsonl")
    if not os.path.exists(path):
        return {}
    got = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                j = json.loads(line)
                if "step" in j and "loss" in j:
                    got[j["step"]] = j["loss"]
    return got


class FabtrainSbatch(unittest.TestCase):
    def job_state(self, c, job):
        s = c.run(["scontrol", "show", "job", job]).stdout
        state = re.search(r"JobState=(\S+)", s)
        restarts = re.search(r"Restarts=(\d+)", s)
        return (state.group(1) if state else "?"), int(restarts.group(1)) if restarts else 0

    def submit(self, c, d, out):
        args = ["--model", os.path.join(d, "model"), "--data", os.path.join(d, "train.jsonl"),
                "--output", out, "--max-length", "16", "--max-steps", str(STEPS), "--lr", "3e-3",
                "--micro-batch-size", "2", "--rendezvous-timeout-ms", "30000",
                "--collective-timeout-ms", "30000", "--device", "cpu", "--no-control"]
        env = {"FABTRAIN": FABTRAIN, "MASTER_ADDR": c.node_addrs["node1"],
               "MASTER_PORT": str(30000 + os.getpid() % 20000)}
        r = c.run(["sbatch", "--parsable", "-N2", "-o", out + ".log", TEMPLATE] + args, extra_env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip().split(";")[0]

    def wait_done(self, c, job, timeout_s=240):
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            state, restarts = self.job_state(c, job)
            if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"):
                return state, restarts
            time.sleep(0.5)
        self.fail("job %s not done after %d s: %s" % (job, timeout_s, self.job_state(c, job)))

    def test_signal_checkpoint_requeue_resume_same_losses(self):
        with SlurmCluster(nodes=2) as c:
            d = c.dir
            write_inputs(d, 64)
            ref_out = os.path.join(d, "ref")
            t0 = time.time()
            job = self.submit(c, d, ref_out)
            self.assertEqual(self.wait_done(c, job), ("COMPLETED", 0))
            t_ref = time.time() - t0
            ref = step_losses(ref_out)
            self.assertEqual(sorted(ref), list(range(1, STEPS + 1)), ref)

            out = os.path.join(d, "run")
            job = self.submit(c, d, out)
            deadline = time.time() + 120
            while len(step_losses(out)) < 5:  # mid-training, well before the last step
                self.assertLess(time.time(), deadline, "no steps recorded in %s" % out)
                time.sleep(0.05)
            r = c.run(["scancel", "--batch", "--signal=USR1", job])
            self.assertEqual(r.returncode, 0, r.stderr)
            t1 = time.time()
            state, restarts = self.wait_done(c, job)
            print("\nuninterrupted job %.1f s; signal -> requeued job completed %.1f s" % (t_ref, time.time() - t1),
                  file=sys.stderr)
            with open(out + ".log") as f:
                log = f.read()
            self.assertEqual((state, restarts), ("COMPLETED", 1), log)
            self.assertIn("asking fabtrain to checkpoint and stop", log)
            self.assertIn("requeueing job %s" % job, log)
            self.assertIn("restart 1", log)
            self.assertTrue([n for n in os.listdir(out) if n.startswith("checkpoint-")], os.listdir(out))
            got = step_losses(out)
            self.assertEqual(sorted(got), list(range(1, STEPS + 1)))
            for s in range(1, STEPS + 1):
                self.assertAlmostEqual(got[s], ref[s], delta=1e-5 * abs(ref[s]), msg="step %d" % s)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabtrain", required=True)
    args, rest = ap.parse_known_args()
    FABTRAIN = os.path.abspath(args.fabtrain)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
