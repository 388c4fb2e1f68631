"""fabcheck cluster over four soft-RoCE nodes with one bad link: the link between vm2 and vm3 is
shaped with htb (frames between those two nodes only, TCP and RoCE v2 alike), as a bad cable or
port slows one path. The matrix carries each pair's RDMA RC figure, and the report names that link
and no other."""
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vm_test  # noqa: E402

SHAPED = (2, 3)


class ClusterOnSoftRoce(unittest.TestCase):
    def test_the_shaped_link_is_named_and_the_rc_matrix_is_there(self):
        with vm_test.cluster(4) as c:
            c.shape_link(*SHAPED, rate="8mbit")
            argv = [vm_test.ARGS.fabcheck, "cluster", *[c.addr(i) for i in range(4)],
                    "--launcher", c.launcher, "--agent-path", "/usr/bin/fabcheck", "--json",
                    "--pairs", "all", "--max-parallel", "2", "--pings", "20", "--bandwidth-ms", "400",
                    "--timeout-ms", "15000", "--rc-iters", "100", "--rc-lat-iters", "50",
                    "--no-search"]
            t0 = time.monotonic()
            r = c.controller(argv, timeout=280)
            elapsed = time.monotonic() - t0
        self.assertTrue(r.stdout.strip(), "no report; exit %d: %s" % (r.returncode, r.stderr[-3000:]))
        doc = json.loads(r.stdout)
        cl = doc["cluster"]
        self.assertEqual(["ok"] * 4, [n["check"] for n in cl["nodes"]], cl["nodes"])
        pairs = cl["matrix"]["pairs"]
        self.assertEqual(6, len(pairs), pairs)
        shaped = {c.addr(SHAPED[0]), c.addr(SHAPED[1])}
        for p in pairs:
            self.assertTrue(p["ok"], p)
            # The figure is the RC test's on every pair: RDMA moved data between every two nodes.
            self.assertIn("rdma", p["source"].lower(), p)
            is_shaped = {p["a"], p["b"]} == shaped
            self.assertEqual(is_shaped, p["state"] in ("slow", "failed"), p)
        self.assertEqual([], [n["host"] for n in cl["nodes"] if n["slow"]])
        named = [f for f in doc["findings"] if f["severity"] in ("warn", "fail") and
                 all(a in f["subject"] + f["message"] for a in shaped)]
        self.assertTrue(named, json.dumps(doc["findings"])[:3000])
        self.assertNotEqual(0, r.returncode)
        figures = {"%s<->%s" % (p["a"], p["b"]): p["gbit_s"] for p in pairs}
        print("cluster over rxe: %s; %.0f s" % (figures, elapsed))


if __name__ == "__main__":
    vm_test.main()
