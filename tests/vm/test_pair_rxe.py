"""fabcheck node and pair on a real kernel verbs stack: soft-RoCE (rdma_rxe) nodes in qemu VMs.

One boot of three nodes: vm0 and vm1 are healthy RoCE nodes (rxe0 over eth0, MTU 9000, memlock
unlimited); vm2's ssh sessions have RLIMIT_MEMLOCK 64 KiB and no CAP_IPC_LOCK (without it the kernel
ignores the limit for root), as a node with the limit NCCL fails on. The controller runs on the
host (in the VMs' bridge namespace) and starts the agents over ssh, fabcheck pair's default launcher.

The healthy pair runs once, with the RC test and the all-reduce transports: the RDMA row of the
comparison (gloo-ibverbs, fabkit's ring on Gloo's ibverbs transport) beside fabkit-socket and
gloo-tcp. Before its fix gloo-ibverbs ran gloo::AllreduceRing, whose last notification send was
never awaited: destroying it threw from gloo::transport::ibverbs::Buffer's destructor ("Destructing
buffer expecting completions"), both agents died with SIGABRT and the RC test was skipped.
"""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vm_test  # noqa: E402

# Small enough for a ~10-20 MB/s soft-RoCE link under TCG, big enough to be a measurement.
RC_FLAGS = ["--rc-iters", "200", "--rc-size", "65536", "--rc-lat-iters", "200"]
TRANSPORTS = ["gloo-ibverbs", "fabkit-socket", "gloo-tcp"]
SWEEP = ["--sizes", "8,64K", "--iters", "5", "--warmup-iters", "1", "--pings", "20",
         "--bandwidth-ms", "500", "--timeout-ms", "20000", "--transport-timeout-ms", "60000"]


class PairOnSoftRoce(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = vm_test.cluster(3, node_options={2: {"memlock": 64}})
        cls.c.__enter__()
        try:
            cls.healthy = cls.pair(cls, 0, 1)
        except BaseException:
            cls.c.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def pair(self, a, b, *extra, flags=None, launcher=None):
        """fabcheck pair between nodes a and b: (the completed process, its JSON, seconds)."""
        c = self.c
        argv = [vm_test.ARGS.fabcheck, "pair", c.addr(a), c.addr(b), "--launcher", launcher or c.launcher,
                "--agent-path", "/usr/bin/fabcheck", "--json",
                *(flags if flags is not None else SWEEP + RC_FLAGS), *extra]
        t0 = time.monotonic()
        r = c.controller(argv, timeout=200)
        elapsed = time.monotonic() - t0
        if not r.stdout.strip():
            raise AssertionError("no report; exit %d, stderr: %s" % (r.returncode, r.stderr[-3000:]))
        return r, json.loads(r.stdout), elapsed

    def test_node_reports_the_rxe_port(self):
        r = self.c.ssh(0, "fabcheck node --json")
        doc = json.loads(r.stdout)
        devices = {d["name"]: d for d in doc["rdma"]["devices"]}
        self.assertIn("rxe0", devices, doc["rdma"])
        port = devices["rxe0"]["ports"][0]
        self.assertEqual("ACTIVE", port["state"], port)
        self.assertEqual("Ethernet", port["link_layer"], port)
        gids = port["gids"]
        v2 = [g for g in gids if g.get("type") == "RoCE v2"]
        self.assertTrue(any(g["gid"].endswith("ffff:c612:3c0b")
                            for g in v2), gids)
        failing = [f for f in doc["findings"] if f["severity"] == "fail"]
        self.assertEqual([], failing, "a healthy soft-RoCE node failed")

    def test_pair_measures_rc_beside_tcp_and_the_allreduces(self):
        r, doc, elapsed = self.healthy
        p = doc["pair"]
        chosen = [l for l in p["links"] if l["chosen"]]
        self.assertEqual(1, len(chosen), p["links"])
        self.assertGreater(chosen[0]["single_stream_gbit_s"], 0)
        rc = p["rdma_rc"]
        self.assertEqual("ran", rc["status"], rc)
        self.assertEqual(1, len(rc["pairs"]), rc)
        pr = rc["pairs"][0]
        self.assertEqual(("ok", "Ethernet"), (pr["status"], pr["link_layer"]), pr)
        self.assertGreater(pr["bw_gbps"], 0)
        self.assertGreater(pr["lat_us_median"], 0)
        self.assertEqual(200, pr["write_bw"][0]["iters"], pr["write_bw"][0])
        self.assertTrue(pr["write_bw"][1]["data_verified"], pr["write_bw"][1])  # the server checks
        self.assertEqual([], [s for s in p["steps"] if s["status"] != "ok"], "a step failed")
        # virtio-net reports no link speed, which fabcheck will not guess: that warning (and exit
        # 1 for it) is the only one a healthy soft-RoCE pair may raise.
        raised = {f["code"] for f in doc["findings"] if f["severity"] in ("warn", "fail")}
        self.assertEqual({"pair.link_speed_unknown"}, raised, doc["findings"])
        self.assertEqual(1, r.returncode)
        print("pair over rxe: RC write %.3f Gbit/s, send latency median %.0f us, %.0f s in all"
              % (pr["bw_gbps"], pr["lat_us_median"], elapsed))

    def test_gloo_ibverbs_runs_beside_the_socket_rows_with_exact_sums(self):
        _, doc, _ = self.healthy
        by_name = {t["transport"]: t for t in doc["pair"]["transports"]}
        for name in TRANSPORTS:
            t = by_name[name]
            self.assertEqual("ok", t["status"], t)
            self.assertEqual([8, 65536], [s["bytes"] for s in t["sizes"]], name)
            for s in t["sizes"]:
                self.assertTrue(s["correct"], (name, s))
                self.assertGreater(s["busbw_gbps"], 0, (name, s))
        ib = by_name["gloo-ibverbs"]
        for rank in ib["ranks"]:
            self.assertTrue(rank["extra"]["algorithm"].startswith("fabkit ring on Gloo's ibverbs transport"),
                            rank["extra"])
            self.assertEqual("rxe0", rank["extra"]["hca"])
            self.assertNotIn("left_allocated", rank["extra"])
        self.assertEqual("rxe0:1 (eth0) <-> rxe0:1 (eth0), RoCE", ib["via"])
        self.assertEqual("eth0 <-> eth0", by_name["fabkit-socket"]["via"])
        print("busbw at 64 KiB (GB/s): " + ", ".join(
            "%s %.4f" % (n, by_name[n]["sizes"][1]["busbw_gbps"]) for n in TRANSPORTS))

    def test_the_report_names_gloo_ibverbs_as_the_rdma_row_and_why(self):
        r, doc, _ = self.healthy
        row = doc["pair"]["rdma_allreduce"]
        self.assertEqual("gloo-ibverbs", row["transport"], row)
        self.assertIn("needs no GPU", row["reason"])
        self.assertIn("so the rows compare transports on one link", row["reason"])
        saved = os.path.join(os.environ.get("TMPDIR", "/tmp"), "fabkit-vm-pair-%d.json" % os.getpid())
        with open(saved, "w") as f:
            f.write(r.stdout)
        try:
            text = subprocess.run([vm_test.ARGS.fabcheck, "report", saved], capture_output=True,
                                  text=True, timeout=60).stdout
        finally:
            os.unlink(saved)
        self.assertRegex(text, r"\n  gloo-ibverbs +rxe0:1 \(eth0\) <-> rxe0:1 \(eth0\), RoCE +ok +[0-9.]+ +65536")
        self.assertRegex(text, r"\n  fabkit-socket +eth0 <-> eth0 +ok +[0-9.]+ ")
        self.assertRegex(text, r"\n  gloo-tcp +eth0 <-> eth0 +ok +[0-9.]+ ")
        self.assertIn("\nRDMA row: gloo-ibverbs on rxe0:1 (eth0) <-> rxe0:1 (eth0), RoCE: fabkit's ring", text)

    def test_low_memlock_is_named_on_its_host(self):
        # ibv_reg_mr really fails on vm2 (the kernel's pinned-page accounting against its 64 KiB
        # limit); the finding names that host's port, the limit, and the fix.
        r, doc, _ = self.pair(0, 2, "--transports", "none")
        self.assertEqual(1, r.returncode)
        pr = doc["pair"]["rdma_rc"]["pairs"][0]
        self.assertEqual("failed", pr["status"], pr)
        reg = [f for f in doc["findings"] if f["code"] == "rdma.rc.reg_mr_failed"]
        self.assertTrue(reg, json.dumps(doc["findings"])[:3000])
        self.assertEqual({"fail"}, {f["severity"] for f in reg}, reg)
        self.assertEqual({self.c.addr(2) + ":rxe0:1"}, {f["subject"] for f in reg}, reg)
        self.assertIn("RLIMIT_MEMLOCK", reg[0]["message"])
        self.assertIn("ulimit -l unlimited", reg[0]["fix"])


    def test_crashing_gloo_ibverbs_leaves_the_rc_test_and_the_other_transports(self):
        # Debian's Gloo abort over soft-RoCE comes and goes (seen in 1 of 4 runs at sizes 8..4M):
        # the runner test hook makes it certain, set in both agents' environment through the ssh
        # launcher; gloo-ibverbs' child aborts after its first size.
        launcher = self.c.launcher + " env FABKIT_TEST_RUNNER_FAULT=gloo-ibverbs:abort"
        r, doc, elapsed = self.pair(0, 1, launcher=launcher)
        p = doc["pair"]
        self.assertEqual(1, r.returncode, doc["findings"])
        self.assertTrue(all(s["status"] == "ok" for s in p["steps"]), p["steps"])
        rc = p["rdma_rc"]
        self.assertEqual("ran", rc["status"], rc)
        self.assertEqual({"write_bw": {"size_bytes": 65536, "iters": 200},
                          "send_lat": {"size_bytes": 2, "iters": 200}}, rc["plan"])
        pr = rc["pairs"][0]
        self.assertEqual("ok", pr["status"], pr)
        self.assertGreater(pr["bw_gbps"], 0)
        self.assertGreater(pr["lat_us_median"], 0)
        runs = {t["transport"]: t for t in p["transports"]}
        for name in ("raw-exchange", "fabkit-socket", "gloo-tcp"):
            self.assertEqual("ok", runs[name]["status"], runs[name])
        gloo = runs["gloo-ibverbs"]
        self.assertEqual("failed", gloo["status"], gloo)
        rank0 = gloo["ranks"][0]["extra"]
        self.assertEqual("runner_crashed", rank0["error"], gloo["ranks"][0])
        self.assertTrue(rank0["child_exit"].startswith("killed by SIGABRT (signal 6: Aborted)"), rank0)
        self.assertIn("FABKIT_TEST_RUNNER_FAULT asks for 'abort'", rank0["last_words"])
        codes = [f["code"] for f in doc["findings"]]
        self.assertIn("pair.transport_crashed", codes)
        self.assertNotIn("pair.agent_lost", codes)
        print("RC over rxe beside a crashed gloo-ibverbs: write %.3f Gbit/s, send latency median "
              "%.0f us, %.0f s in all" % (pr["bw_gbps"], pr["lat_us_median"], elapsed))


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
        r, doc, _ = self.pair(0, 1, flags=[
            "--transports", "gloo-ibverbs", "--sizes", "4M", "--iters", "100", "--warmup-iters", "0",
            "--pings", "5", "--bandwidth-ms", "200", "--timeout-ms", "15000",
            "--transport-timeout-ms", "60000", "--rc-iters", "50", "--rc-lat-iters", "50"])
        said, _ = killer.communicate(timeout=60)
        self.assertEqual("killed", said.strip())
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
