"""fabcheck pair with 3 and 4 network-namespace hosts (tests/integration/netns/netns.py): the
all-reduce across all of them as one ring. Checks the N-host JSON (docs/json/pair.md,
"pair_group"): every transport the build has either ran with exact results and busbw =
algbw * 2(n-1)/n, or is unavailable with its reason; the probed pairs are the ring neighbours; a
host that cannot be reached is named by step; usage errors exit 2. The namespaces are deleted by
the test's cleanup and, if the test process is killed, by netns.py's exit/SIGTERM handlers.

Run: test_pair_group.py /path/to/fabcheck   (root; exit 77 = skipped when namespaces cannot be made)
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
from json_schemas import schema_for_error_or, validate_doc  # noqa: E402
import netns  # noqa: E402

FABCHECK = None
FAST = ["--pings", "100", "--bandwidth-ms", "200", "--sizes", "4,4K,1M,4M", "--iters", "5", "--warmup-iters", "1",
        "--timeout-ms", "4000", "--transport-timeout-ms", "60000"]


class PairGroupTest(unittest.TestCase):
    def world(self, hosts):
        w = netns.NetnsWorld(hosts=hosts, decoys=False, controller=True).__enter__()
        self.addCleanup(w.close)
        return w

    def pair(self, w, *extra, hosts=None):
        argv = ["ip", "netns", "exec", w.ctl, FABCHECK, "pair", *(hosts or w.hosts), "--launcher",
                "ip netns exec {host}", "--json", *FAST, *extra]
        t0 = time.monotonic()
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240)
        try:
            doc = json.loads(r.stdout)
        except ValueError:
            self.fail("not JSON (exit %d): %s\nstderr: %s" % (r.returncode, r.stdout[:2000], r.stderr[-2000:]))
        validate_doc(doc, schema_for_error_or(doc, "pair.schema.json"))  # docs/schema/
        return r.returncode, doc, time.monotonic() - t0

    def test_four_hosts_all_reduce_exact_with_busbw(self):
        w = self.world(4)
        rc, doc, _ = self.pair(w)
        self.assertEqual(doc["kind"], "pair")
        self.assertNotIn("pair", doc)  # the 2-host section is not faked for N hosts
        g = doc["pair_group"]
        self.assertEqual(g["pair_group_version"], 1)
        self.assertEqual(g["hosts"], w.hosts)
        self.assertTrue(all(s["status"] == "ok" for s in g["steps"]), g["steps"])
        h = w.hosts
        self.assertEqual([(p["a"], p["b"]) for p in g["probed_pairs"]],
                         [(h[0], h[1]), (h[1], h[2]), (h[2], h[3]), (h[3], h[0])])
        for p in g["probed_pairs"]:  # the ring links carry their round trips too
            for l in p["links"]:
                if l["status"] == "open":
                    hist = l["rtt_histogram"]
                    self.assertEqual(sum(hist["counts"]) + hist["overflow"], int(FAST[FAST.index("--pings") + 1]))
        self.assertEqual([(a["host"], a["addr"], a["ifname"]) for a in g["ring_addrs"]],
                         [(h[i], w.addr(i), "fab0") for i in range(4)])
        self.assertEqual(len(g["rings"]), 1)
        self.assertEqual(g["rings"][0]["order"], w.hosts)
        by = {t["transport"]: t for t in g["rings"][0]["transports"]}
        for name in ("fabkit-socket", "raw-exchange", "gloo-tcp"):
            t = by[name]
            self.assertEqual(t["status"], "ok", t["reason"])
            self.assertEqual(t["world_size"], 4)
            self.assertIn(t["port_attempts"], (1, 2, 3))
            self.assertEqual([s["bytes"] for s in t["sizes"]], [4, 4096, 1 << 20, 4 << 20])
            self.assertTrue(t["all_correct"])
            self.assertEqual(len(t["ranks"]), 4)
            for r in t["ranks"]:
                self.assertEqual(r["status"], "ok")
                self.assertTrue(all(s["correct"] for s in r["sizes"]), r["sizes"])
            for s in t["sizes"]:
                self.assertGreater(s["algbw_gbps"], 0)
                self.assertAlmostEqual(s["algbw_gbps"], s["bytes"] / (s["time_us"] * 1e-6) / 1e9, places=6)
                # raw-exchange: each rank sends its buffer once to its right neighbour, so its
                # per-link rate (busbw) is algbw; an all-reduce's is algbw * 2(n-1)/n.
                factor = 1.0 if name == "raw-exchange" else 2.0 * 3 / 4
                self.assertAlmostEqual(s["busbw_gbps"], s["algbw_gbps"] * factor, places=6)
            self.assertEqual(t["peak_busbw_gbps"], max(s["busbw_gbps"] for s in t["sizes"]))
        self.assertEqual(by["fabkit-socket"]["ranks"][0]["extra"]["world_size"], 4)
        # Those the hosts cannot run are there with the reason, never silently dropped.
        for name, t in by.items():
            if name not in ("fabkit-socket", "raw-exchange", "gloo-tcp"):
                self.assertEqual(t["status"], "unavailable", t)
                self.assertTrue(t["reason"], t)
        if "nccl-socket" in by:
            self.assertIn("2 ranks", by["nccl-socket"]["reason"])
        self.assertIn(rc, (0, 1))
        self.assertEqual([], [f for f in doc["findings"] if f["severity"] != "info"], doc["findings"])

    def test_three_hosts_text_and_an_unreachable_host_named(self):
        w = self.world(3)
        r = subprocess.run(["ip", "netns", "exec", w.ctl, FABCHECK, "pair", *w.hosts, "--launcher",
                            "ip netns exec {host}", "--transports", "fabkit-socket", *FAST],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("pair group of 3 hosts", r.stdout)
        # The ring's transport table: transport, status, peak busbw (GB/s), at bytes, results.
        self.assertRegex(r.stdout, r"transport +status +peak_busbw_GB/s +at_bytes +results")
        self.assertRegex(r.stdout, r"\n  fabkit-socket +ok +[0-9]+\.[0-9]{3} +\d+ +exact\n")
        # h2's cluster interface down: its agent starts (the launcher is local) but no link to it
        # is open: the ring step fails by name, within the bounds, and no agent is left behind.
        w.run(2, "ip", "link", "set", "dev", "fab0", "down")
        rc, doc, elapsed = self.pair(w, "--transports", "fabkit-socket")
        self.assertEqual(rc, 1)
        failed = [s for s in doc["pair_group"]["steps"] if s["status"] == "failed"]
        self.assertEqual(1, len(failed), failed)
        self.assertIn(failed[0]["code"], ("pair.no_reachable_link", "pair.agent_unreachable"))
        self.assertIn(w.hosts[2], failed[0]["error"] + (failed[0]["host"] or ""))
        self.assertEqual(doc["pair_group"]["rings"], [])
        self.assertLess(elapsed, 60)
        time.sleep(0.2)
        for i in range(3):
            self.assertEqual([], w.pids(i))

    def test_usage_errors_exit_2(self):
        w = self.world(3)
        for hosts, needle in (([w.hosts[0], w.hosts[1], w.hosts[0]], "given twice"),
                              ([w.hosts[0], w.hosts[1], "-oProxyCommand=x"], "-oProxyCommand=x")):
            rc, doc, _ = self.pair(w, hosts=hosts)
            self.assertEqual(rc, 2, doc)
            self.assertIn(needle, doc["error"]["message"])
        # The HTML page is the 2-host report's; refused before anything is launched.
        with tempfile.TemporaryDirectory() as tmp:
            page = os.path.join(tmp, "group.html")
            rc, doc, elapsed = self.pair(w, "--html", page)
            self.assertEqual(rc, 2, doc)
            self.assertIn("--html renders the 2-host", doc["error"]["message"])
            self.assertFalse(os.path.exists(page))
            self.assertLess(elapsed, 5)


if __name__ == "__main__":
    FABCHECK = os.path.abspath(sys.argv.pop(1))
    ok, why = netns.have_root_and_netns()
    if not ok:
        print("SKIP: " + why)
        sys.exit(77)
    unittest.main(verbosity=2)
