"""fabcheck node and pair on a real kernel verbs stack: soft-RoCE (rdma_rxe) nodes in qemu VMs.

One boot of three nodes: vm0 and vm1 are healthy RoCE nodes (rxe0 over eth0, MTU 9000, memlock
unlimited); vm2's ssh sessions have RLIMIT_MEMLOCK 64 KiB and no CAP_IPC_LOCK (without it the kernel
ignores the limit for root), as a node with the limit NCCL fails on. The controller runs on the
host (in the VMs' bridge namespace) and starts the agents over ssh, fabcheck pair's default launcher.
"""
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vm_test  # noqa: E402

# Small enough for a ~10-20 MB/s soft-RoCE link under TCG, big enough to be a measurement.
RC_FLAGS = ["--rc-iters", "200", "--rc-size", "65536", "--rc-lat-iters", "200"]
SWEEP = ["--sizes", "8,64K", "--iters", "5", "--warmup-iters", "1", "--pings", "20",
         "--bandwidth-ms", "500", "--timeout-ms", "20000", "--transport-timeout-ms", "60000"]


class PairOnSoftRoce(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = vm_test.cluster(3, node_options={2: {"memlock": 64}})
        cls.c.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def pair(self, a, b, *extra):
        c = self.c
        argv = [vm_test.ARGS.fabcheck, "pair", c.addr(a), c.addr(b), "--launcher", c.launcher,
                "--agent-path", "/usr/bin/fabcheck", "--json", *SWEEP, *RC_FLAGS, *extra]
        t0 = time.monotonic()
        r = c.controller(argv, timeout=200)
        elapsed = time.monotonic() - t0
        self.assertTrue(r.stdout.strip(), "no report; exit %d, stderr: %s" % (r.returncode, r.stderr[-3000:]))
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
        r, doc, elapsed = self.pair(0, 1)
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
        by_name = {t["transport"]: t for t in p["transports"]}
        for name in ("fabkit-socket", "gloo-tcp", "gloo-ibverbs"):
            self.assertEqual("ok", by_name[name]["status"], by_name[name])
            self.assertTrue(by_name[name]["all_correct"], by_name[name])
        self.assertEqual(0, r.returncode, [f for f in doc["findings"] if f["severity"] != "ok"])
        print("pair over rxe: RC write %.3f Gbit/s, send latency median %.0f us, %.0f s in all"
              % (pr["bw_gbps"], pr["lat_us_median"], elapsed))

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


if __name__ == "__main__":
    vm_test.main()
