"""fabcheck node on soft-RoCE hosts (issue 37, item 1): one VM, one kernel, three rxe devices.

rxe0 sits on eth0 in the initial network namespace (tests/vm/init). In the same boot a veth pair
joins namespaces A and B, with rxe1 over va (in A) and rxe2 over vb (in B): RDMA devices are shared
by every namespace (rxe cannot be moved), netdevs are not, which is what a container on a
shared-RDMA host sees. `fabcheck node --json` runs in the initial namespace and in B; each must
report its own device fully (ACTIVE, Ethernet, the IPv4-mapped RoCE v2 GID, MTUs, counters where
the kernel has them, RoCE QoS unavailable) and the others as "netdev in another namespace", never as
a fault of the node.
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vm_test  # noqa: E402

# Namespaces A and B, a veth pair between them (MTU 9000, as eth0: RoCE MTU 4096 fits), an rxe
# device over each end, created from inside the namespace that has the netdev. iproute2's ip by its
# path: busybox's shell prefers its own ip applet, which has no netns. /dev/shm as a tuned node has
# it (the 512 MiB VM's default, half its memory, is limits.shm_small: true, but not this test's).
SETUP = """set -e
ip=/usr/sbin/ip
mount -o remount,size=2G /dev/shm
mkdir -p /var/run/netns
$ip netns add A
$ip netns add B
$ip link add va type veth peer name vb
$ip link set va netns A
$ip link set vb netns B
$ip -n A addr add 192.168.77.1/24 dev va
$ip -n B addr add 192.168.77.2/24 dev vb
for ns in A B; do $ip -n $ns link set lo up; done
$ip -n A link set va mtu 9000 up
$ip -n B link set vb mtu 9000 up
$ip netns exec A /usr/bin/rdma link add rxe1 type rxe netdev va
$ip netns exec B /usr/bin/rdma link add rxe2 type rxe netdev vb
"""
# 0x0000...ffff:c612:3c0b is ::ffff:198.18.60.11 (vm0's eth0), c0a8:4d02 is ::ffff:192.168.77.2.
GID_ETH0 = "0000:0000:0000:0000:0000:ffff:c612:3c0b"
GID_VB = "0000:0000:0000:0000:0000:ffff:c0a8:4d02"


def port_of(doc, device):
    for d in doc["rdma"]["devices"]:
        if d["name"] == device:
            return d, d["ports"][0]
    raise AssertionError("no %s in %s" % (device, [d["name"] for d in doc["rdma"]["devices"]]))


def codes(doc, severity=None):
    return [f["code"] for f in doc["findings"] if severity is None or f["severity"] == severity]


class NodeOnSoftRoce(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = vm_test.cluster(1)
        cls.c.__enter__()
        cls.c.ssh(0, SETUP, timeout=60, check=True)
        cls.runs = {}
        for where, prefix in (("initial", ""), ("B", "/usr/sbin/ip netns exec B ")):
            r = cls.c.ssh(0, prefix + "fabcheck node --json", timeout=120)
            cls.runs[where] = (r, json.loads(r.stdout) if r.stdout.strip() else None)
        cls.dmesg = cls.c.ssh(0, "dmesg").stdout
        # rxe sizes its MTU with an 80-byte header allowance (rxe_param.h), a NIC's RoCE with 96:
        # at 4180 rxe runs 4096 where a NIC would run 2048.
        cls.c.ssh(0, "/usr/sbin/ip link set eth0 mtu 4180", check=True)
        r = cls.c.ssh(0, "fabcheck node --json", timeout=120)
        cls.runs["mtu4180"] = (r, json.loads(r.stdout) if r.stdout.strip() else None)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def doc(self, where):
        r, doc = self.runs[where]
        self.assertIsNotNone(doc, "no report in %s; exit %d, stderr: %s" %
                             (where, r.returncode, r.stderr[-2000:]))
        return r, doc

    def assert_healthy_exit(self, where):
        r, doc = self.doc(where)
        # This test's own areas must have nothing to say above info; whatever else the small VM
        # draws (none expected) must be what sets the exit status.
        ours = [f for f in doc["findings"] if f["severity"] in ("warn", "fail") and
                f["code"].split(".")[0] in ("rdma", "roce_qos", "kernel_log")]
        self.assertEqual([], ours, "a healthy soft-RoCE node was faulted in %s" % where)
        worse = [f for f in doc["findings"] if f["severity"] in ("warn", "fail")]
        self.assertEqual([], worse, "findings above info in %s" % where)
        self.assertEqual(0, r.returncode, r.stderr[-2000:])

    def test_initial_namespace_reports_rxe0_in_full(self):
        _, doc = self.doc("initial")
        self.assertEqual("verbs", doc["rdma"]["source"])
        dev, port = port_of(doc, "rxe0")
        self.assertEqual("eth0", dev["parent"])
        self.assertEqual(("ACTIVE", "LinkUp", "Ethernet"),
                         (port["state"], port["phys_state"], port["link_layer"]), port)
        self.assertEqual(("eth0", "here"), (port["netdev"], port["netdev_place"]), port)
        v2 = {g["index"]: g for g in port["gids"] if g["type"] == "RoCE v2"}
        self.assertIn(port["roce_v2_gid_index"], v2, port["gids"])
        self.assertEqual(GID_ETH0, v2[port["roce_v2_gid_index"]]["gid"], port["gids"])
        self.assertEqual("eth0", v2[port["roce_v2_gid_index"]]["netdev"])
        self.assertEqual((4096, 4096), (port["active_mtu"], port["max_mtu"]), port)
        # rxe counts in the driver's hw_counters only (no PMA counters/).
        self.assertEqual(["hw_counters"], port["counter_dirs"], port)
        self.assertIn("sent_pkts", port["counters"], port["counters"])
        qos = {p["device"]: p for p in doc["roce_qos"]["ports"]}
        self.assertEqual({"rxe0"}, set(qos), doc["roce_qos"]["ports"])
        self.assertEqual(9000, qos["rxe0"]["netdev_mtu"])
        self.assertEqual(4096, qos["rxe0"]["roce_mtu_allowed"])
        self.assertEqual("not_supported", qos["rxe0"]["dcb"]["status"], qos["rxe0"]["dcb"])
        dcb = [f for f in doc["findings"] if f["code"] == "roce_qos.dcb_unavailable"]
        self.assertEqual(["info"], [f["severity"] for f in dcb], dcb)
        self.assertIn("soft-RoCE", dcb[0]["message"])

    def test_initial_namespace_names_the_other_namespaces_devices(self):
        _, doc = self.doc("initial")
        for name, netdev in (("rxe1", "va"), ("rxe2", "vb")):
            _, port = port_of(doc, name)
            self.assertEqual(("ACTIVE", netdev, "other_namespace"),
                             (port["state"], port["netdev"], port["netdev_place"]), port)
        self.assertNotIn("rdma.roce_no_netdev", codes(doc))
        elsewhere = [f for f in doc["findings"] if f["code"] == "rdma.roce_netdev_elsewhere"]
        self.assertEqual(1, len(elsewhere), codes(doc))
        self.assertEqual("info", elsewhere[0]["severity"])
        self.assertIn("rxe1:1 (va), rxe2:1 (vb)", elsewhere[0]["message"])
        self.assertIn("can use only rxe0:1 (eth0)", elsewhere[0]["message"])
        self.assert_healthy_exit("initial")

    def test_second_namespace_uses_its_own_device_only(self):
        _, doc = self.doc("B")
        _, mine = port_of(doc, "rxe2")
        self.assertEqual(("ACTIVE", "Ethernet", "vb", "here"),
                         (mine["state"], mine["link_layer"], mine["netdev"], mine["netdev_place"]))
        self.assertEqual(GID_VB, [g["gid"] for g in mine["gids"]
                                  if g["index"] == mine["roce_v2_gid_index"]][0], mine["gids"])
        self.assertEqual((4096, 4096), (mine["active_mtu"], mine["max_mtu"]), mine)
        for name, netdev in (("rxe0", "eth0"), ("rxe1", "va")):
            _, port = port_of(doc, name)
            self.assertEqual((netdev, "other_namespace"), (port["netdev"], port["netdev_place"]))
        # The kernel gives a non-initial namespace's view of an RDMA device no counters
        # (drivers/infiniband/core/sysfs.c: hw_counters only on the full device): none is read,
        # none is faulted.
        for d in doc["rdma"]["devices"]:
            self.assertEqual([], d["ports"][0]["counter_dirs"], d["name"])
        self.assertNotIn("rdma.roce_no_netdev", codes(doc))
        elsewhere = [f for f in doc["findings"] if f["code"] == "rdma.roce_netdev_elsewhere"]
        self.assertEqual(1, len(elsewhere), codes(doc))
        self.assertIn("can use only rxe2:1 (vb)", elsewhere[0]["message"])
        self.assertIn("NCCL_IB_HCA==rxe2:1", elsewhere[0]["fix"])
        qos = {p["device"]: p for p in doc["roce_qos"]["ports"]}
        self.assertEqual({"rxe2"}, set(qos), doc["roce_qos"]["ports"])
        self.assertEqual(9000, qos["rxe2"]["netdev_mtu"])
        self.assert_healthy_exit("B")

    def test_rxe_mtu_follows_the_netdev_with_its_own_headroom(self):
        _, doc = self.doc("mtu4180")
        _, port = port_of(doc, "rxe0")
        self.assertEqual(4096, port["active_mtu"], port)
        qos = {p["device"]: p for p in doc["roce_qos"]["ports"]}
        self.assertEqual((4180, 4096), (qos["rxe0"]["netdev_mtu"], qos["rxe0"]["roce_mtu_allowed"]))
        self.assertNotIn("roce_qos.mtu_mismatch", codes(doc))
        self.assertNotIn("roce_qos.mtu_small", codes(doc))

    def test_kernel_log_rxe_lines_are_no_fault(self):
        lines = [l for l in self.dmesg.splitlines() if "rxe" in l or "ib_core" in l or
                 "infiniband" in l]
        self.assertTrue(lines, "no rxe lines in the kernel log:\n" + self.dmesg[-3000:])
        print("rxe/ib_core kernel log lines:\n" + "\n".join(lines))
        for where in ("initial", "B"):
            _, doc = self.doc(where)
            bad = [f for f in doc["findings"] if f["code"].startswith("kernel_log.") and
                   f["severity"] != "info"]
            self.assertEqual([], bad, where)


if __name__ == "__main__":
    vm_test.main()
