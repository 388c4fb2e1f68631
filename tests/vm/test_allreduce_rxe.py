"""The RDMA row of `fabcheck pair`'s all-reduce comparison on a real verbs stack (issue #37 items
4 and 7): two soft-RoCE VMs without GPUs, gloo-ibverbs (fabkit's ring on Gloo's ibverbs
transport) beside fabkit-socket and gloo-tcp on the same link.

Before the fix gloo-ibverbs ran gloo::AllreduceRing, whose last notification send was never
awaited: destroying it threw from gloo::transport::ibverbs::Buffer's destructor ("Destructing
buffer expecting completions") and both agents died with SIGABRT, so the comparison had no RDMA
row. One boot of two nodes; the controller starts the agents over ssh.
"""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vm_test  # noqa: E402

TRANSPORTS = ["gloo-ibverbs", "fabkit-socket", "gloo-tcp"]
# Two sizes (one float pair and 64 KiB) and few iterations: the link moves ~10-20 MB/s under TCG
# and the whole vm label has 5 minutes (tests/fixtures/reports/regen_pair_rxe.py uses the same).
FLAGS = ["--transports", ",".join(TRANSPORTS), "--sizes", "8,64K", "--iters", "5",
         "--warmup-iters", "1", "--pings", "20", "--bandwidth-ms", "500", "--timeout-ms", "20000",
         "--transport-timeout-ms", "60000", "--rc-iters", "50", "--rc-size", "65536",
         "--rc-lat-iters", "50"]


class AllreduceComparisonOnSoftRoce(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = vm_test.cluster(2)
        cls.c.__enter__()
        cls.pair_run = cls.pair(*FLAGS)
        if not cls.pair_run.stdout.strip():
            raise AssertionError("no report; exit %d, stderr: %s" % (cls.pair_run.returncode, cls.pair_run.stderr[-3000:]))
        cls.doc = json.loads(cls.pair_run.stdout)
        cls.by_name = {t["transport"]: t for t in cls.doc["pair"]["transports"]}

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    @classmethod
    def pair(cls, *flags):
        c = cls.c
        return c.controller([vm_test.ARGS.fabcheck, "pair", c.addr(0), c.addr(1), "--launcher", c.launcher,
                             "--agent-path", "/usr/bin/fabcheck", "--json", *flags], timeout=240)

    def test_no_agent_died(self):
        lost = [s for s in self.doc["pair"]["steps"] if s["status"] == "failed"]
        self.assertEqual([], lost, "a step failed (an agent killed by the transport?)")

    def test_gloo_ibverbs_runs_beside_the_socket_rows_with_exact_sums(self):
        for name in TRANSPORTS:
            t = self.by_name[name]
            self.assertEqual("ok", t["status"], t)
            self.assertEqual([8, 65536], [s["bytes"] for s in t["sizes"]], name)
            for s in t["sizes"]:
                self.assertTrue(s["correct"], (name, s))
                self.assertGreater(s["busbw_gbps"], 0, (name, s))
        ib = self.by_name["gloo-ibverbs"]
        for rank in ib["ranks"]:
            self.assertTrue(rank["extra"]["algorithm"].startswith("fabkit ring on Gloo's ibverbs transport"),
                            rank["extra"])
            self.assertEqual("rxe0", rank["extra"]["hca"])
            self.assertNotIn("left_allocated", rank["extra"])
        self.assertEqual("rxe0:1 (eth0) <-> rxe0:1 (eth0), RoCE", ib["via"])
        self.assertEqual("eth0 <-> eth0", self.by_name["fabkit-socket"]["via"])
        print("busbw at 64 KiB (GB/s): " + ", ".join(
            "%s %.4f" % (n, self.by_name[n]["sizes"][1]["busbw_gbps"]) for n in TRANSPORTS))

    def test_the_report_names_gloo_ibverbs_as_the_rdma_row_and_why(self):
        row = self.doc["pair"]["rdma_allreduce"]
        self.assertEqual("gloo-ibverbs", row["transport"], row)
        self.assertIn("needs no GPU", row["reason"])
        self.assertIn("so the rows compare transports on one link", row["reason"])
        saved = os.path.join(os.environ.get("TMPDIR", "/tmp"), "fabkit-vm-pair-%d.json" % os.getpid())
        with open(saved, "w") as f:
            f.write(self.pair_run.stdout)
        try:
            text = subprocess.run([vm_test.ARGS.fabcheck, "report", saved], capture_output=True,
                                  text=True, timeout=60).stdout
        finally:
            os.unlink(saved)
        self.assertRegex(text, r"\n  gloo-ibverbs +rxe0:1 \(eth0\) <-> rxe0:1 \(eth0\), RoCE +ok +[0-9.]+ +65536")
        self.assertRegex(text, r"\n  fabkit-socket +eth0 <-> eth0 +ok +[0-9.]+ ")
        self.assertRegex(text, r"\n  gloo-tcp +eth0 <-> eth0 +ok +[0-9.]+ ")
        self.assertIn("\nRDMA row: gloo-ibverbs on rxe0:1 (eth0) <-> rxe0:1 (eth0), RoCE: fabkit's ring", text)


    def test_a_peer_killed_mid_run_is_a_failed_run_not_an_abort(self):
        # vm1's agent is SIGKILLed while gloo-ibverbs moves data (3 s after the ring registered its
        # region: an 8 MiB memory region for a 4 MiB sweep, [output | inbox]; the RC test, which
        # runs first, registers nothing that size):
        # vm0's rank sees its writes fail or its receives time out, in its own thread (sync mode),
        # and reports a failed run; it must not abort (Gloo's device thread, or a buffer destroyed
        # with a write pending, would: SIGABRT) nor hang past the bounds.
        killer = self.c.ssh_background(
            1, "for i in $(seq 600); do if rdma resource show mr | grep -q 'mrlen 8388608'; then "
               "sleep 3; kill -9 $(pidof fabcheck); echo killed; exit 0; fi; sleep 0.2; done; "
               "echo 'the ring never registered its region'")
        r = self.pair("--transports", "gloo-ibverbs", "--sizes", "4M", "--iters", "100", "--warmup-iters", "0",
                      "--pings", "5", "--bandwidth-ms", "200", "--timeout-ms", "15000",
                      "--transport-timeout-ms", "60000")
        said, _ = killer.communicate(timeout=60)
        self.assertEqual("killed", said.strip())
        self.assertTrue(r.stdout.strip(), "no report; exit %d, stderr: %s" % (r.returncode, r.stderr[-3000:]))
        doc = json.loads(r.stdout)
        text = json.dumps(doc)
        self.assertNotIn("terminate called", text)
        self.assertNotIn("SIGABRT", text)
        by_name = {t["transport"]: t for t in doc["pair"]["transports"]}
        self.assertIn("gloo-ibverbs", by_name, doc["pair"]["steps"])
        ib = by_name["gloo-ibverbs"]
        self.assertEqual("failed", ib["status"], ib)
        # vm0's agent lived on: only vm1 is lost.
        lost = [f for f in doc["findings"] if f["code"] == "pair.agent_lost"]
        self.assertEqual({self.c.addr(1)}, {f["subject"] for f in lost}, lost)
        # Where vm0's runner answered before the controller gave the transport up (its reason is
        # run_guarded's "gloo: ..."), its document names the kind: its receives time out (Gloo: "Read timeout") or its writes fail.
        for rk in ib["ranks"]:
            if isinstance(rk, dict) and str(rk.get("reason", "")).startswith("gloo: "):
                want = "peer_timeout" if "timeout" in rk["reason"].lower() else "io_error"
                self.assertEqual(want, rk["extra"]["error"], rk)
                print("vm0's gloo-ibverbs after the peer was killed: %s (%s)%s" % (
                    rk["extra"]["error"], rk["reason"][:200],
                    "; " + rk["extra"]["left_allocated"] if "left_allocated" in rk["extra"] else ""))


if __name__ == "__main__":
    vm_test.main()
