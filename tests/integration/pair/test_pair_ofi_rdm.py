"""Issue 40: the RDM point-to-point test over libfabric in `fabcheck pair`, between two
network-namespace hosts (tests/integration/netns/netns.py) over the installed libfabric's tcp
provider (--ofi-provider tcp): it runs, moves bytes, reports bandwidth and latency beside the TCP
test's figure; without EFA devices and without the flag it is skipped, saying why; a peer that
never answers (the runner hook FABKIT_TEST_RUNNER_FAULT=ofi_rdm:hang, docs/pair.md) ends in a
named timeout, not a hang, and costs only its step; so does a transfer that stalls mid-window on
a shaped link, on both sides, without crashing either runner.

Run: test_pair_ofi_rdm.py /path/to/fabcheck   (root; skips with the reason otherwise)
"""
import json
import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
from json_schemas import schema_for_error_or, validate_doc  # noqa: E402
import netns  # noqa: E402

FABCHECK = None
FAST = ["--pings", "50", "--bandwidth-ms", "200", "--transports", "none", "--timeout-ms", "4000",
        "--ofi-messages", "64", "--ofi-lat-iters", "200"]


def fast_without(extra):
    """FAST less the flags `extra` gives itself (each flag may be given once)."""
    out = []
    for i in range(0, len(FAST), 2):
        if FAST[i] not in extra:
            out += FAST[i:i + 2]
    return out


class OfiRdmPairTest(unittest.TestCase):
    def setUp(self):
        self.world = netns.NetnsWorld(hosts=2, decoys=False, controller=True).__enter__()
        self.addCleanup(self.world.close)

    def pair(self, *extra, launcher="ip netns exec {host}", json_out=True):
        w = self.world
        argv = ["ip", "netns", "exec", w.ctl, FABCHECK, "pair", *w.hosts, "--launcher", launcher,
                *fast_without(extra), *extra] + (["--json"] if json_out else [])
        t0 = time.monotonic()
        p = subprocess.run(argv, capture_output=True, text=True, timeout=180)
        return p, time.monotonic() - t0

    def doc(self, p):
        try:
            d = json.loads(p.stdout)
        except ValueError:
            self.fail("not JSON (exit %d): %s\nstderr: %s" % (p.returncode, p.stdout[:2000], p.stderr[-2000:]))
        validate_doc(d, schema_for_error_or(d, "pair.schema.json"))
        return d

    def test_tcp_provider_moves_bytes_and_reports_bandwidth_and_latency(self):
        p, _ = self.pair("--ofi-provider", "tcp")
        d = self.doc(p)
        r = d["pair"]["ofi_rdm"]
        self.assertEqual("ran", r["status"], r)
        self.assertEqual("tcp", r["provider"])
        self.assertEqual("--ofi-provider", r["selected_by"])
        self.assertGreater(r["bandwidth_gbps"], 0)
        self.assertGreater(r["latency_us"], 0)
        self.assertGreater(r["tcp_gbps"], 0)
        self.assertAlmostEqual(r["ratio_to_tcp"], r["bandwidth_gbps"] / r["tcp_gbps"], places=6)
        for side in ("client", "server"):
            self.assertEqual("ok", r[side]["status"], r[side])
            self.assertEqual("tcp;ofi_rxm", r[side]["provider"])
            self.assertEqual("fab0", r[side]["domain"])  # the interface of the chosen link
        # 64 messages of 1 MiB one way, 250 pings and 250 pongs of 8 B, one 8-byte acknowledgement:
        # every byte one side sent, the other received.
        moved = 64 * (1 << 20) + 2 * 250 * 8 + 8
        self.assertEqual(moved, r["client"]["bytes_moved"])
        self.assertEqual(moved, r["server"]["bytes_moved"])
        steps = {s["step"]: s for s in d["pair"]["steps"]}
        self.assertEqual("ok", steps["ofi_rdm"]["status"])
        self.assertNotIn("pair.ofi_rdm_failed", [f["code"] for f in d["findings"]])
        text, _ = self.pair("--ofi-provider", "tcp", json_out=False)
        self.assertIn("libfabric RDM point-to-point (tcp): ", text.stdout)
        self.assertIn("TCP on the same pair", text.stdout)

    def test_without_efa_devices_or_the_flag_the_test_is_skipped_saying_why(self):
        p, _ = self.pair()
        d = self.doc(p)
        r = d["pair"]["ofi_rdm"]
        self.assertEqual("skipped", r["status"], r)
        w = self.world
        self.assertEqual("no EFA devices (%s: 0, %s: 0); give --ofi-provider tcp to run it over "
                         "libfabric's tcp provider" % (w.hosts[0], w.hosts[1]), r["reason"])
        self.assertEqual([], [f for f in d["findings"] if f["code"].startswith("pair.ofi_rdm")])

    def test_peer_that_never_answers_ends_in_a_named_timeout(self):
        launcher = "ip netns exec {host} env FABKIT_TEST_RUNNER_FAULT=ofi_rdm:hang"
        p, elapsed = self.pair("--ofi-provider", "tcp", "--transport-timeout-ms", "6000",
                               launcher=launcher)
        d = self.doc(p)
        r = d["pair"]["ofi_rdm"]
        self.assertEqual("failed", r["status"], r)
        for side in ("client", "server"):
            self.assertEqual("runner_timeout", r[side]["extra"]["error"], r[side])
            self.assertIn("within the sweep's bound of 6000 ms", r[side]["reason"])
            self.assertIn("asks for 'hang'", r[side]["reason"])
        f = [x for x in d["findings"] if x["code"] == "pair.ofi_rdm_failed"]
        self.assertEqual(1, len(f), d["findings"])
        self.assertEqual("warn", f[0]["severity"])
        # The agents survived their children: the session ended in order.
        steps = {s["step"]: s for s in d["pair"]["steps"]}
        self.assertEqual("ok", steps["bye"]["status"], d["pair"]["steps"])
        self.assertNotIn("pair.agent_lost", [x["code"] for x in d["findings"]])
        self.assertLess(elapsed, 60)
        time.sleep(0.3)
        self.assertEqual([], self.world.pids(0) + self.world.pids(1))

    def test_transfer_that_stalls_mid_window_is_a_named_timeout_on_both_sides(self):
        """A link so slow that one 1 MiB message takes longer than --timeout-ms: the client gives
        up with messages in flight while the server still has receives posted. Both sides must
        report the timeout; closing Debian's libfabric 1.17 rxm endpoint in that state crashed
        the server's runner with SIGSEGV before the session was left to the process's exit."""
        w = self.world
        for a, b in ((0, 1), (1, 0)):
            netns.shape_to_peer(w.hosts[a], "fab0", w.addr(b), "4mbit")
        p, elapsed = self.pair("--ofi-provider", "tcp", "--ofi-messages", "32",
                               "--ofi-lat-iters", "20", "--timeout-ms", "1000")
        d = self.doc(p)
        r = d["pair"]["ofi_rdm"]
        self.assertEqual("failed", r["status"], r)
        for side in ("client", "server"):
            self.assertEqual("timeout", r[side].get("code"), r[side])
            self.assertIn("no completion from the peer within 1000 ms", r[side]["reason"])
        self.assertLess(elapsed, 120)
        time.sleep(0.3)
        self.assertEqual([], self.world.pids(0) + self.world.pids(1))

    def test_bad_provider_name_is_a_usage_error(self):
        w = self.world
        p = subprocess.run([FABCHECK, "pair", *w.hosts, "--launcher", "ip netns exec {host}",
                            "--ofi-provider", "tcp;rm -rf"], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(2, p.returncode, p.stderr)
        self.assertIn("is not a libfabric provider name", p.stderr)


if __name__ == "__main__":
    FABCHECK = os.path.abspath(sys.argv.pop(1))
    ok, why = netns.have_root_and_netns()
    if not ok:
        print("SKIP: " + why)
        sys.exit(77)
    unittest.main(verbosity=2)
