"""fabcheck cluster inside a real 3-node Slurm allocation, submitted with the shipped template
slurm/fabcheck-cluster.sbatch (slurm_cluster.py: slurmctld, one slurmd
per network-namespace node entered with nsenter). The batch script runs `fabcheck cluster` with no
host arguments: the hosts come from SLURM_JOB_NODELIST (expanded from node[1-3]) and the node
checks and agents are started with srun on their nodes. The link node1<->node2 is shaped with tbf
in both directions: the report must name that link and blame no node.
"""
import argparse
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
from slurm_cluster import SlurmCluster  # noqa: E402
import netns  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
from json_schemas import validate_doc  # noqa: E402

FABCHECK = None
TEMPLATE = os.path.join(HERE, "..", "..", "..", "slurm", "fabcheck-cluster.sbatch")


class ClusterUnderSlurm(unittest.TestCase):
    def test_slow_link_named_from_the_allocation_nodelist(self):
        with SlurmCluster(nodes=3) as c:
            ifname = lambda i: "v%sn%d" % (c.tag, i)  # noqa: E731 (the node's interface)
            netns.shape_to_peer(c.netns[0], ifname(1), c.node_addrs["node2"])
            netns.shape_to_peer(c.netns[1], ifname(2), c.node_addrs["node1"])
            # The shipped template itself (slurm/fabcheck-cluster.sbatch), arguments passed on.
            r = c.run(["sbatch", "--wait", "-N3", "-o", os.path.join(c.dir, "cluster.log"), TEMPLATE,
                       "--bandwidth-ms", "300", "--pings", "100", "--timeout-ms", "20000",
                       "--slow-fraction", "0.2"],
                      timeout_s=200, extra_env={"FABCHECK": FABCHECK, "OUT_DIR": c.dir})
            with open(os.path.join(c.dir, "cluster.log")) as f:
                log = f.read()
            # The job's exit is fabcheck's: 1, since a link is slow.
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr + log + c.logs())
            job = r.stdout.split()[-1]
            out = os.path.join(c.dir, "fabcheck-cluster-%s.json" % job)
            prof = os.path.join(c.dir, "cluster-%s.json" % job)
            self.assertIn("report: %s, profile: %s, exit 1" % (out, prof), log)
            self.assertRegex(log, r"FAIL +cluster.link_slow +node1<->node2: ")  # the text report in the job log
            with open(out) as f:
                doc = json.load(f)
            validate_doc(doc, "cluster-report.schema.json")  # docs/schema/
            self.assertEqual(1, doc["summary"]["exit_code"])
            cl = doc["cluster"]
            print("\nschedule: %s" % json.dumps(cl["schedule"]), file=sys.stderr)
            self.assertEqual(cl["launcher"], "srun")
            self.assertEqual(cl["hosts"], ["node1", "node2", "node3"])
            self.assertTrue(all(n["check"] == "ok" for n in cl["nodes"]), cl["nodes"])
            codes = [(f["code"], f["subject"]) for f in doc["findings"]]
            self.assertIn(("cluster.link_slow", "node1<->node2"), codes)
            self.assertFalse([c2 for c2 in codes if c2[0] in ("cluster.node_slow", "cluster.node_unreachable")])
            by = {(p["a"], p["b"]): p for p in cl["matrix"]["pairs"]}
            self.assertEqual(by[("node1", "node2")]["state"], "slow")
            for key in (("node1", "node3"), ("node2", "node3")):
                p = by.get(key) or by[(key[1], key[0])]
                self.assertEqual(p["state"], "ok", p)
                # Each node's own address: the agents ran on their nodes, not all on node1.
                self.assertEqual(p["link"]["addr_a"], c.node_addrs[p["a"]])
                self.assertEqual(p["link"]["addr_b"], c.node_addrs[p["b"]])
            # The re-test kept node1<->node2 slow: the bad-link search ran by itself, its group
            # tests' agents started through srun on the allocation's nodes, and named the link.
            se = cl["search"]
            self.assertEqual(se["trigger"], "node1<->node2 slow after its re-test")
            self.assertEqual((se["ran"], se["outcome"], se["link"]), (True, "found", "node1<->node2"), se)
            self.assertIn(("cluster.link_search_found", "node1<->node2"), codes)
            self.assertIn("bad-link search (node1<->node2 slow after its re-test): found node1<->node2", log)
            with open(prof) as f:
                profile = json.load(f)
            validate_doc(profile, "cluster.schema.json")
            self.assertEqual(sorted(n["hostname"] for n in profile["nodes"]), ["node1", "node2", "node3"])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabcheck", required=True)
    args, rest = ap.parse_known_args()
    FABCHECK = os.path.abspath(args.fabcheck)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
