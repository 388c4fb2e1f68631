"""`cmake --install` into a staging prefix, then fabcheck run from the prefix alone (issue #24):
the build tree and the checkout are hidden (a private mount namespace with empty tmpfs over both),
so a binary that still reached into them (a RUNPATH into .venv, a runner path in build/) fails
here. Checks the layout (GNUInstallDirs), that the installed binaries carry no RUNPATH and no debug
sections but a .gnu_debuglink to the separate debug file, `fabcheck --version` against the
project's version, `fabcheck node --json`, and a `fabcheck pair` between netns hosts.

    test_install.py --build BUILD --source SRC --version X.Y.Z
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
import netns  # noqa: E402

ARGS = None


def readelf(path, flag):
    return subprocess.run(["readelf", flag, "-W", path], capture_output=True, text=True, check=True).stdout


def hidden(argv, stage):
    """argv in a private mount namespace where the build tree and the checkout are empty."""
    # The build tree first (it may lie inside the checkout), then the checkout, then the torch
    # wheel's environment the build used (.venv may be a link to another checkout's).
    dirs = [ARGS.build, ARGS.source]
    venv = os.path.realpath(os.path.join(ARGS.source, ".venv"))
    if os.path.isdir(venv) and not venv.startswith(ARGS.source + "/"):
        dirs.append(venv)
    mounts = " && ".join("mount -t tmpfs fabkit-hidden %s" % d for d in dirs)
    script = "%s && exec \"$@\"" % mounts
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "hidden", *argv]


class InstallFromPrefix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stage = tempfile.mkdtemp(prefix="fabkit-install-")
        for component in ("fabcheck", "nccl-runner", "gpu-bench", "debug"):
            r = subprocess.run(["cmake", "--install", ARGS.build, "--prefix", cls.stage, "--component", component],
                               capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                raise AssertionError("cmake --install --component %s: %s%s" % (component, r.stdout, r.stderr))
        cls.fabcheck = os.path.join(cls.stage, "bin", "fabcheck")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.stage, ignore_errors=True)

    def test_layout(self):
        for rel in ("bin/fabcheck", "bin/.debug/fabcheck.debug", "libexec/fabkit/fabcheck-health.sh",
                    "share/fabkit/slurm/fabcheck-cluster.sbatch", "share/fabkit/slurm/fabtrain.sbatch",
                    "share/fabkit/schema/node.schema.json", "share/fabkit/schema/pair.schema.json",
                    "share/doc/fabkit/README.md", "share/doc/fabkit/install.md",
                    "share/doc/fabkit/findings/pair.md"):
            self.assertTrue(os.path.exists(os.path.join(self.stage, rel)), rel)
        self.assertTrue(os.access(self.fabcheck, os.X_OK))

    def test_release_binaries_have_no_runpath_and_their_debug_info_apart(self):
        binaries = [self.fabcheck]
        for helper in ("fabcheck-nccl-runner", "fabcheck-gpu-bench"):  # built when NCCL / cuBLAS were found
            path = os.path.join(self.stage, "libexec", "fabkit", helper)
            built = os.path.join(ARGS.build, "cli", helper)  # built beside fabcheck (common/helper_program.h)
            self.assertEqual(os.path.exists(built), os.path.exists(path), f"{helper}: built but not installed")
            if os.path.exists(path):
                binaries.append(path)
        for b in binaries:
            dyn = readelf(b, "-d")
            self.assertNotIn("RUNPATH", dyn, b)
            self.assertNotIn("(RPATH)", dyn, b)
            sections = readelf(b, "-S")
            self.assertNotIn(".debug_info", sections, b)
            self.assertIn(".gnu_debuglink", sections, b)
            debug = os.path.join(os.path.dirname(b), ".debug", os.path.basename(b) + ".debug")
            self.assertIn(".debug_info", readelf(debug, "-S"), debug)
        built = os.path.join(ARGS.build, "cli", "fabcheck")
        print("\n  fabcheck: %.1f MB built, %.1f MB installed (+ %.1f MB debug file)" % (
            os.path.getsize(built) / 1e6, os.path.getsize(self.fabcheck) / 1e6,
            os.path.getsize(os.path.join(self.stage, "bin", ".debug", "fabcheck.debug")) / 1e6), file=sys.stderr)

    def test_version_is_the_projects(self):
        r = subprocess.run(hidden([self.fabcheck, "--version"], self.stage), capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertEqual("fabcheck " + ARGS.version, r.stdout.strip())

    def test_node_runs_from_the_prefix_alone(self):
        r = subprocess.run(hidden([self.fabcheck, "node", "--json"], self.stage), capture_output=True, text=True,
                           timeout=120)
        self.assertIn(r.returncode, (0, 1), r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual("node", doc["kind"])
        # The tree really was hidden: the build-tree binary is not there in the same namespace.
        r = subprocess.run(hidden(["test", "-e", os.path.join(ARGS.build, "cli", "fabcheck")], self.stage))
        self.assertEqual(1, r.returncode)

    def test_pair_between_netns_hosts_from_the_prefix_alone(self):
        ok, why = netns.have_root_and_netns()
        if not ok:
            self.skipTest(why)
        with netns.NetnsWorld(hosts=2, decoys=False, controller=True) as w:
            argv = ["ip", "netns", "exec", w.ctl, self.fabcheck, "pair", *w.hosts, "--launcher",
                    "ip netns exec {host}", "--transports", "none", "--pings", "50", "--bandwidth-ms", "100",
                    "--timeout-ms", "5000", "--json"]
            r = subprocess.run(hidden(argv, self.stage), capture_output=True, text=True, timeout=120)
            doc = json.loads(r.stdout)
            failed = [s for s in doc["pair"]["steps"] if s["status"] == "failed"]
            self.assertEqual([], failed, r.stderr[-2000:])
            self.assertEqual(w.addr(0), doc["pair"]["recommended"]["addr_a"])
            for side in ("a", "b"):
                self.assertEqual(ARGS.version, doc["pair"]["agents"][side]["agent_version"])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--version", required=True)
    ARGS, rest = ap.parse_known_args()
    ARGS.build = os.path.realpath(ARGS.build)
    ARGS.source = os.path.realpath(ARGS.source)
    if os.geteuid() != 0:
        print("skipped: hiding the build tree needs root (a private mount namespace)")
        sys.exit(77)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
