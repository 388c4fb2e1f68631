"""Faults on a real verbs stack (soft-RoCE VMs): each is named by `fabcheck pair`, on the right
host, within the step's bound; none hangs.

One boot of four nodes: vm0 and vm1 healthy, vm2 with eth0 at MTU 1500 (rxe's active MTU 1024
against 4096 on the others), vm3 whose sessions carry NCCL_IB_GID_INDEX=5 (an empty GID table
entry: rxe fills index 0 with the link-local and 1 with the IPv4-mapped GID).
Mid-test faults act on vm1 while its RC test runs, and are undone before the next test.
"""
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vm_test  # noqa: E402

TIMEOUT_MS = 6000
# About 10 s of RDMA writes on a ~10-20 MB/s TCG link: long enough to break in the middle.
LONG_RC = ["--rc-iters", "2000", "--rc-size", "65536", "--rc-lat-iters", "100"]
SHORT_RC = ["--rc-iters", "100", "--rc-size", "65536", "--rc-lat-iters", "100"]
BASE = ["--transports", "none", "--pings", "10", "--bandwidth-ms", "200",
        "--timeout-ms", str(TIMEOUT_MS)]


class RcFaults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = vm_test.cluster(4, node_options={2: {"mtu": 1500}, 3: {"nccl_gid_index": 5}})
        cls.c.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def pair(self, a, b, rc_flags, during=None):
        """Runs the pair; `during` (a shell command for vm1) starts once the RC test is underway."""
        c = self.c
        argv = [vm_test.ARGS.fabcheck, "pair", c.addr(a), c.addr(b), "--launcher", c.launcher,
                "--agent-path", "/usr/bin/fabcheck", "--json", *BASE, *rc_flags]
        t0 = time.monotonic()
        if during:
            # The fault lands once vm1's agent holds a QP (its rdma_rc request has started).
            fault = c.ssh_background(1, "for i in $(seq 600); do "
                                        "[ -n \"$(/usr/bin/rdma resource show qp 2>/dev/null | grep -v 'qpn 1 ')\" ] && break; "
                                        "sleep 0.05; done; sleep 2; " + during)
        r = c.controller(argv, timeout=180)
        elapsed = time.monotonic() - t0
        if during:
            fault.communicate(timeout=60)
        self.assertTrue(r.stdout.strip(), "no report; exit %d: %s" % (r.returncode, r.stderr[-2000:]))
        doc = json.loads(r.stdout)
        return r, doc, elapsed

    def rc_pair(self, doc):
        rc = doc["pair"]["rdma_rc"]
        self.assertEqual("ran", rc["status"], rc)
        self.assertEqual(1, len(rc["pairs"]), rc)
        return rc["pairs"][0]

    def codes(self, doc):
        return {f["code"]: f for f in doc["findings"]}

    # Each mid-test fault undoes itself on vm1 (its ssh session outlives a short link outage): the
    # host cannot reach vm1 to repair it while eth0 is down.
    def test_netdev_down_mid_test_is_named_not_a_hang(self):
        r, doc, elapsed = self.pair(0, 1, LONG_RC, during="/usr/sbin/ip link set eth0 down; "
                                                         "sleep 10; /usr/sbin/ip link set eth0 up")
        self.assertEqual(1, r.returncode)
        pr = self.rc_pair(doc)
        self.assertEqual("failed", pr["status"], pr)
        self.assertRegex(pr["reason"], "no progress|RDMA writes completed|completed with", pr["reason"])
        self.assertLess(elapsed, 120)

    def test_peer_rxe_removed_mid_test_is_named_not_a_hang(self):
        r, doc, elapsed = self.pair(0, 1, LONG_RC, during="/usr/bin/rdma link delete rxe0; sleep 3; "
                                                         "/usr/bin/rdma link add rxe0 type rxe netdev eth0")
        self.assertEqual(1, r.returncode)
        pr = self.rc_pair(doc)
        self.assertEqual("failed", pr["status"], pr)
        self.assertLess(elapsed, 120)

    def test_roce_blocked_on_the_wire_is_named_not_a_hang(self):
        # TCP works (the agents talk, the endpoints are exchanged) but RoCE v2's UDP port 4791 is
        # dropped between the nodes: the QPs connect and no data arrives, as behind a firewall or
        # an ACL that forgot RoCE.
        c = self.c
        nft = ["nft", "add", "table", "bridge", "fabvm"], \
              ["nft", "add", "chain", "bridge", "fabvm", "forward_roce", "{ type filter hook forward priority 0; }"], \
              ["nft", "add", "rule", "bridge", "fabvm", "forward_roce", "udp", "dport", "4791", "drop"]
        for argv in nft:
            out = c.in_ns(argv)
            self.assertEqual(0, out.returncode, out.stderr)
        try:
            r, doc, elapsed = self.pair(0, 1, SHORT_RC)
        finally:
            c.in_ns(["nft", "delete", "table", "bridge", "fabvm"])
        self.assertEqual(1, r.returncode)
        pr = self.rc_pair(doc)
        self.assertEqual("failed", pr["status"], pr)
        self.assertIn("timed out", pr["reason"])
        self.assertLess(elapsed, 90)

    def test_a_port_whose_mtu_differs_runs_at_the_smaller_mtu(self):
        r, doc, _ = self.pair(0, 2, SHORT_RC)
        pr = self.rc_pair(doc)
        self.assertEqual("ok", pr["status"], pr)
        self.assertEqual(1024, pr["path_mtu"], pr)
        self.assertIn("rdma.rc.mtu_mismatch", self.codes(doc), doc["findings"])

    def test_a_wrong_gid_index_is_named_on_its_host(self):
        r, doc, elapsed = self.pair(0, 3, SHORT_RC)
        self.assertEqual(1, r.returncode)
        pr = self.rc_pair(doc)
        self.assertEqual("failed", pr["status"], pr)
        bad = [f for f in doc["findings"] if f["severity"] == "fail" and self.c.addr(3) in f["subject"]]
        self.assertTrue(bad, doc["findings"])
        self.assertIn("NCCL_IB_GID_INDEX", json.dumps(bad))
        self.assertLess(elapsed, 90)


if __name__ == "__main__":
    vm_test.main()
