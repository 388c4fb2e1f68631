"""fabcheck cluster --plan-only at 1,024 hosts (docs/cluster.md, "The schedule"): --pairs auto
within --budget, with and without --topology (a generated Slurm topology.conf), in JSON and text,
and the usage errors of --budget, --pairs and --topology (exit 2, naming the value, file and line).
Nothing is launched: the launcher template would leave a file per host it started.

Run: test_plan_cli.py /path/to/fabcheck   (no root, no network)
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
from json_schemas import schema_for_error_or, validate_doc  # noqa: E402

FABCHECK = None
HOSTS = ["n%04d" % i for i in range(1, 1025)]


def topology_conf(leaves=32, per_leaf=32, spines=16):
    lines = ["# %d leaves of %d nodes, %d spines above each" % (leaves, per_leaf, spines)]
    for l in range(leaves):
        lines.append("SwitchName=leaf%d Nodes=n[%04d-%04d]" % (l + 1, l * per_leaf + 1, (l + 1) * per_leaf))
    for s in range(spines):
        lines.append("SwitchName=spine%d Switches=leaf[1-%d] LinkSpeed=400" % (s + 1, leaves))
    return "\n".join(lines) + "\n"


class PlanOnlyTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.marks = os.path.join(self.tmp.name, "launched")
        os.mkdir(self.marks)

    def fabcheck(self, *args, hosts=HOSTS, env=None):
        argv = [FABCHECK, "cluster", "--plan-only", "--launcher",
                "touch %s/{host}" % self.marks, *args, *hosts]
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=120, env=env)
        self.assertEqual(os.listdir(self.marks), [], "--plan-only launched something")
        return r

    def plan(self, *args, **kw):
        r = self.fabcheck("--json", *args, **kw)
        doc = json.loads(r.stdout)
        validate_doc(doc, schema_for_error_or(doc, "cluster-report.schema.json"))
        return r.returncode, doc

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_auto_plan_at_1024_hosts_fits_ten_minutes(self):
        rc, doc = self.plan()
        self.assertEqual(rc, 0, doc)
        p = doc["plan"]
        self.assertEqual((p["pairs"], p["plan"], p["budget_s"]), ("auto", "shifts", 600.0))
        self.assertTrue(p["fits_budget"])
        self.assertLessEqual(p["total_estimated_s"], 600.0)
        self.assertEqual(p["shifts"][0], 1)
        c = p["coverage"]
        self.assertEqual(c["pairs_total"], 523776)
        self.assertEqual(c["pairs_measured"], p["pair_runs"])
        self.assertGreaterEqual(c["min_pairs_per_node"], 2)
        self.assertEqual(c["topology"], "unknown")
        self.assertTrue(any("found only by the bad-link search" in n for n in c["notes"]), c["notes"])
        # The plan leaves pairs unmeasured, so the search is planned by default and its estimate
        # is kept out of the budget before the pair rounds are chosen.
        self.assertGreater(p["search_reserve_s"], 0)
        self.assertAlmostEqual(p["total_estimated_s"], p["estimated_s"] + p["search_reserve_s"])
        self.assertTrue(any(n.startswith("the bad-link search runs after the matrix") and "kept out of the budget" in n
                            for n in c["notes"]), c["notes"])
        rc, doc = self.plan("--no-search")
        self.assertEqual(doc["plan"]["search_reserve_s"], 0)
        self.assertGreater(doc["plan"]["pair_runs"], p["pair_runs"])  # the whole budget for pairs
        self.assertTrue(any(n.startswith("--no-search:") for n in doc["plan"]["coverage"]["notes"]))
        # Every round's pairs are disjoint and no pair repeats.
        seen = set()
        for rd in p["schedule"]:
            busy = [h for pr in rd["pairs"] for h in pr]
            self.assertEqual(len(busy), len(set(busy)))
            for a, b in rd["pairs"]:
                key = tuple(sorted((a, b)))
                self.assertNotIn(key, seen)
                seen.add(key)

    def test_topology_plan_loads_every_spine_path_twice(self):
        conf = self.write("topology.conf", topology_conf())
        rc, doc = self.plan("--topology", conf)
        self.assertEqual(rc, 0, doc)
        c = doc["plan"]["coverage"]
        self.assertEqual((c["topology"], c["leaves"], c["spines"]), ("leaves+spines", 32, 16))
        self.assertEqual(c["leaf_spine_paths"], 32 * 16 * 2)
        self.assertEqual(c["paths_under_2_loads"], 0)
        self.assertTrue(doc["plan"]["fits_budget"])
        self.assertTrue(any("destination-based routing" in n for n in c["notes"]), c["notes"])
        # A budget for the ring alone: the paths it leaves under 2 loads are named.
        rc, doc = self.plan("--topology", conf, "--budget", "100s", "--per-pair-s", "3",
                            "--max-parallel", "32")
        c = doc["plan"]["coverage"]
        self.assertEqual(doc["plan"]["plan"], "ring")
        self.assertGreater(c["paths_under_2_loads"], 0)
        self.assertEqual(c["paths_under_2_loads_first"][0]["leaf"], "leaf1")

    def test_text_from_an_allocation_and_pairs_all(self):
        env = dict(os.environ, SLURM_JOB_NODELIST="n[0001-1024]")
        r = self.fabcheck(hosts=[], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        for needle in ("plan shifts (--pairs auto) for 1024 nodes", "why: --pairs all would take",
                       "of the 600 s budget\n", "coverage: ", "... (512 pairs)"):
            self.assertIn(needle, r.stdout)
        # --pairs all: what the issue measured, 27 h at 6 s a pair run with 32 at once (the old
        # default), over the budget; the default now runs a round's 512 pairs at once: 1023 waves.
        rc, doc = self.plan("--pairs", "all", "--per-pair-s", "6", "--max-parallel", "32")
        p = doc["plan"]
        self.assertEqual((p["plan"], p["rounds"], p["waves"]), ("all", 1023, 16368))
        self.assertEqual(p["estimated_s"], 98208.0)
        self.assertFalse(p["fits_budget"])
        rc, doc = self.plan("--pairs", "all", "--per-pair-s", "6")
        p = doc["plan"]
        self.assertEqual((p["plan"], p["rounds"], p["waves"], p["max_parallel"]),
                         ("all", 1023, 1023, 512))
        self.assertEqual(p["estimated_s"], 6138.0)

    def test_usage_errors_name_the_value_and_the_fix(self):
        conf = self.write("topology.conf", topology_conf())
        bad_line = self.write("bad.conf", "SwitchName=leaf1 Nodes=n[0001-0004]\nSwitchName=s1 Ports=3\n")
        few = self.write("few.conf", "SwitchName=leaf1 Nodes=n[0001-1000]\n")
        for args, needles in (
                (["--budget", "10x"], ["--budget '10x' is not a duration", "--budget 10m"]),
                (["--budget", "0"], ["--budget '0'"]),
                (["--pairs", "mesh"], ["--pairs 'mesh'", "--pairs auto"]),
                (["--topology", conf + ".missing"], [conf + ".missing"]),
                (["--topology", bad_line], [bad_line + ":2: unknown field Ports="]),
                (["--topology", few], ["24 of 1024 hosts are under no leaf switch (n1001, n1002",
                                       "or run without --topology"])):
            rc, doc = self.plan(*args)
            self.assertEqual(rc, 2, doc)
            for n in needles:
                self.assertIn(n, doc["error"]["message"])


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_plan_cli.py FABCHECK [unittest args]")
    FABCHECK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
