"""fabcheck node --slurm-health against a real Slurm (slurm_cluster.py, one node): a node whose probe
finds a fail (through the shipped wrapper slurm/fabcheck-health.sh; a --sysroot tree with an InfiniBand port in Polling: no link partner) is drained with
a one-line reason naming the finding; --dry-run drains nothing; a healthy probe (this machine has no
fail findings; its kernel log judged only from the check's start, --since 0s) leaves the node idle;
--prom writes the node_exporter textfile. The health check must finish well inside Slurm's 60 s
HealthCheckProgram limit.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slurm_cluster import SlurmCluster  # noqa: E402

FABCHECK = None
WRAPPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "slurm",
                       "fabcheck-health.sh")


def port_down_sysroot(root):
    port = os.path.join(root, "sys", "class", "infiniband", "mlx5_1", "ports", "1")
    os.makedirs(port)
    for d in ("proc", "etc"):
        os.makedirs(os.path.join(root, d))
    files = {"state": "1: DOWN", "phys_state": "2: Polling", "link_layer": "InfiniBand",
             "rate": "100 Gb/sec (4X EDR)", "lid": "0x0", "sm_lid": "0x0"}
    for name, text in files.items():
        with open(os.path.join(port, name), "w") as f:
            f.write(text + "\n")
    with open(os.path.join(root, "sys", "class", "infiniband", "mlx5_1", "fw_ver"), "w") as f:
        f.write("28.39.1002\n")


class HealthUnderSlurm(unittest.TestCase):
    def state(self, c, node):
        r = c.run(["sinfo", "-h", "-n", node, "-o", "%t"])
        return r.stdout.strip()

    def test_fail_finding_drains_with_reason_dry_run_and_healthy_do_not(self):
        with SlurmCluster(nodes=1) as c, tempfile.TemporaryDirectory() as tmp:
            node = c.node_names[0]
            root = os.path.join(tmp, "root")
            port_down_sysroot(root)
            r = c.run([WRAPPER, "--sysroot", root, "--node-name", node],
                      extra_env={"FABCHECK": FABCHECK, "FABKIT_HEALTH_DRY_RUN": "1"})
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertEqual(r.stdout.strip(), "fabcheck health: %s drain: fabcheck: rdma.port_polling "
                                               "mlx5_1:1 (dry run: not drained)" % node)
            self.assertTrue(self.state(c, node).startswith("idle"), self.state(c, node))

            # This machine as the healthy node, without its kernel log's past: whatever the host's
            # ring buffer holds (another test's link flaps, a record someone forged) is not this
            # test's, so only records logged while the check runs are judged (--since 0s).
            prom = os.path.join(tmp, "fabkit.prom")
            r = c.run([FABCHECK, "node", "--slurm-health", "--node-name", node, "--prom", prom,
                       "--since", "0s"])
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertRegex(r.stdout, r"^fabcheck health: %s ok \(0 fail, \d+ warn\)\n$" % node)
            self.assertTrue(self.state(c, node).startswith("idle"), self.state(c, node))
            with open(prom) as f:
                text = f.read()
            self.assertIn('fabkit_node_findings{severity="fail"} 0\n', text)
            self.assertIn("# TYPE fabkit_node_interface_running gauge\n", text)

            # The drain through the shipped HealthCheckProgram wrapper, options from its environment.
            t0 = time.monotonic()
            r = c.run([WRAPPER, "--sysroot", root, "--node-name", node],
                      extra_env={"FABCHECK": FABCHECK, "FABKIT_PROM": prom})
            elapsed = time.monotonic() - t0
            print("\nhealth check with drain: %.2f s" % elapsed, file=sys.stderr)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertLess(elapsed, 20)
            self.assertIn("drain", self.state(c, node))
            show = c.run(["scontrol", "show", "node", node]).stdout
            self.assertIn("Reason=fabcheck: rdma.port_polling mlx5_1:1", show)
            with open(prom) as f:
                text = f.read()
            self.assertIn('fabkit_node_hca_port_active{device="mlx5_1",port="1"} 0\n', text)
            self.assertIn('fabkit_node_finding{code="rdma.port_polling",severity="fail"} 1\n', text)

    def test_unreachable_controller_is_an_error_within_the_bound(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = os.path.join(tmp, "root")
            port_down_sysroot(root)
            conf = os.path.join(tmp, "slurm.conf")
            with open(conf, "w") as f:  # a controller nobody runs: scontrol fails, we say so
                f.write("ClusterName=none\nSlurmctldHost=localhost\nSlurmctldPort=1\n"
                        "NodeName=n1 State=UNKNOWN\nPartitionName=p Nodes=ALL\n")
            env = dict(os.environ, SLURM_CONF=conf)
            t0 = time.monotonic()
            r = subprocess.run([FABCHECK, "node", "--slurm-health", "--sysroot", root, "--node-name", "n1",
                                "--drain-timeout-ms", "5000"], env=env, capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
            self.assertIn("scontrol update NodeName=n1 State=DRAIN", r.stderr)
            self.assertLess(time.monotonic() - t0, 15)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabcheck", required=True)
    args, rest = ap.parse_known_args()
    FABCHECK = os.path.abspath(args.fabcheck)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
