"""fabcheck pair with the srun launcher inside a real 2-node Slurm allocation (issue #3: "srun
inside an allocation (srun -w HOST -N1 -n1)"). The batch script runs the controller on the first
node; each agent is started by srun on its node (its own network namespace), and the verdict must
name each node's own address and interface, with correct all-reduce results.
"""
import argparse
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "netns"))
import machine  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
from json_schemas import validate_doc  # noqa: E402
from slurm_cluster import SlurmCluster  # noqa: E402

FABCHECK = None


class PairUnderSlurm(unittest.TestCase):
    def test_srun_launcher_runs_both_agents_in_the_allocation(self):
        with SlurmCluster(nodes=2) as c:
            script = os.path.join(c.dir, "pair.sbatch")
            out = os.path.join(c.dir, "pair.json")
            with open(script, "w") as f:
                f.write("#!/bin/bash\n#SBATCH -N2\n#SBATCH -o %s/pair.log\n"
                        "%s pair node1 node2 --launcher srun --sizes 4K,1M --json --timeout-ms 20000 > %s\n"
                        "echo $? > %s.rc\n" % (c.dir, FABCHECK, out, out))
            r = c.run(["sbatch", "--wait", script], timeout_s=150)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr + c.logs())
            with open(out) as f:
                doc = json.load(f)
            validate_doc(doc, "pair.schema.json")  # docs/schema/
            with open(out + ".rc") as f:
                rc = int(f.read())
            self.assertEqual(rc, doc["summary"]["exit_code"])
            pair = doc["pair"]
            self.assertEqual(pair["launcher"], "srun")
            launches = [s for s in pair["steps"] if s["step"] == "launch"]
            self.assertTrue(launches and all(s["status"] == "ok" for s in launches), pair["steps"])
            rec = pair["recommended"]
            self.assertEqual(rec["addr_a"], c.node_addrs["node1"])
            self.assertEqual(rec["addr_b"], c.node_addrs["node2"])
            self.assertEqual(rec["env"]["node1"]["NCCL_SOCKET_IFNAME"], "=" + rec["interface_a"])
            by_name = {t["transport"]: t for t in pair["transports"]}
            for name in ("fabkit-socket", "gloo-tcp", "raw-exchange"):
                self.assertEqual(by_name[name]["status"], "ok", by_name[name])
                self.assertTrue(by_name[name]["all_correct"], name)
            # NCCL / ibverbs: "unavailable" without the hardware; with it they run or say why
            # (both Slurm nodes share this machine's one GPU: NCCL may refuse).
            for name, t in by_name.items():
                allowed, why = machine.expected_statuses(name)
                self.assertIn(t["status"], allowed, "%s (%s): %s" % (name, why, t))
                if t["status"] != "ok":
                    self.assertTrue(t["reason"], t)
                else:
                    self.assertTrue(t["all_correct"], t)
            ran = [n for n, t in by_name.items() if t["status"] == "ok" and n != "raw-exchange"]
            self.assertIn(rec["transport"], ran)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabcheck", required=True)
    args, rest = ap.parse_known_args()
    FABCHECK = os.path.abspath(args.fabcheck)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
