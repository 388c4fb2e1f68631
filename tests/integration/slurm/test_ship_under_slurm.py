"""fabcheck pair --ship with the srun launcher in a real 2-node Slurm allocation (issue #24): the
controller makes a private directory on every node (srun mkdir -m 0700), copies its own binary
there with sbcast, each srun-started agent checks the copy (SHA-256) before running it, and the
directories are removed at the end. A copy damaged on the way (an sbcast that overwrites 16 bytes, first
on PATH) is refused by name (pair.ship_checksum_mismatch) and removed as well; a node directory
another user owns is refused before sbcast writes (pair.ship_unsafe_dir).

Each node gets its own temporary directory (SlurmCluster(node_private_dir=...)): the two slurmd
share this machine's filesystem, where real nodes have a local /tmp each.
"""
import argparse
import json
import os
import stat
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slurm_cluster import SlurmCluster  # noqa: E402

FABCHECK = None

CORRUPTING_SBCAST = """#!/bin/sh
# sbcast SOURCE DEST with 16 bytes of the copy overwritten on the way.
damaged=$(mktemp) || exit 1
cp "$1" "$damaged" && chmod 0755 "$damaged" &&
  printf 'damaged-by-test!' | dd of="$damaged" bs=1 seek=100000 conv=notrunc 2>/dev/null
/usr/bin/sbcast "$damaged" "$2"; rc=$?
rm -f "$damaged"
exit $rc
"""


class ShipUnderSlurm(unittest.TestCase):
    def run_job(self, c, ship_dir, path_prefix="", command="pair node1 node2", before=""):
        # The controller runs from a copy without debug sections (the installed form: a few MB for
        # sbcast instead of the build tree's ~160 MB).
        controller = os.path.join(c.dir, "controller", "fabcheck")
        os.makedirs(os.path.dirname(controller))
        subprocess.run(["objcopy", "--strip-debug", FABCHECK, controller], check=True)
        out = os.path.join(c.dir, "pair.json")
        left = os.path.join(c.dir, "left.txt")
        script = os.path.join(c.dir, "ship.sbatch")
        with open(script, "w") as f:
            f.write("#!/bin/bash\n#SBATCH -N2\n#SBATCH -o %s/ship.log\n" % c.dir)
            if path_prefix:
                f.write("export PATH=%s:$PATH\n" % path_prefix)
            f.write(before)
            f.write("%s %s --launcher srun --ship --ship-dir %s --transports none --pings 50 "
                    "--bandwidth-ms 100 --json --timeout-ms 20000 > %s\necho $? > %s.rc\n"
                    % (controller, command, ship_dir, out, out))
            # What is left in each node's own directory once the controller is done.
            f.write("srun -N2 --ntasks-per-node=1 sh -c 'echo $(hostname) $(ls -A %s | wc -l)' > %s\n" % (ship_dir, left))
        r = c.run(["sbatch", "--wait", script], timeout_s=200)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr + c.logs())
        with open(out) as f:
            doc = json.load(f)
        with open(left) as f:
            counts = [line.split()[1] for line in f.read().splitlines() if line.strip()]
        return doc, counts

    def test_shipped_with_sbcast_checked_run_and_removed(self):
        ship_dir = "/tmp/fabkit-ship-nodes-%d" % os.getpid()
        with SlurmCluster(nodes=2, node_private_dir=ship_dir) as c:
            doc, left = self.run_job(c, ship_dir)
            failed = [s for s in doc["pair"]["steps"] if s["status"] == "failed"]
            self.assertEqual([], failed)
            for side in ("a", "b"):
                self.assertTrue(doc["pair"]["agents"][side]["agent_shipped"], doc["pair"]["agents"][side])
            self.assertEqual(["0", "0"], left)
        os.rmdir(ship_dir)

    def test_cluster_ships_once_per_node_for_its_node_checks_and_pairs(self):
        ship_dir = "/tmp/fabkit-ship-nodes-%d" % os.getpid()
        with SlurmCluster(nodes=2, node_private_dir=ship_dir) as c:
            doc, left = self.run_job(c, ship_dir, command="cluster")
            cl = doc["cluster"]
            self.assertEqual(["ok", "ok"], [n["check"] for n in cl["nodes"]], cl["nodes"])
            self.assertEqual(1, len(cl["matrix"]["pairs"]))
            self.assertTrue(cl["matrix"]["pairs"][0]["ok"], cl["matrix"]["pairs"][0])
            self.assertEqual(["0", "0"], left)
        os.rmdir(ship_dir)

    def test_a_copy_sbcast_damaged_is_refused_and_removed(self):
        ship_dir = "/tmp/fabkit-ship-nodes-%d" % os.getpid()
        with SlurmCluster(nodes=2, node_private_dir=ship_dir) as c:
            bindir = os.path.join(c.dir, "bin")
            os.makedirs(bindir)
            fake = os.path.join(bindir, "sbcast")
            with open(fake, "w") as f:
                f.write(CORRUPTING_SBCAST)
            os.chmod(fake, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
            doc, left = self.run_job(c, ship_dir, path_prefix=bindir)
            failed = [s for s in doc["pair"]["steps"] if s["status"] == "failed"]
            self.assertEqual(1, len(failed), doc["pair"]["steps"])
            self.assertEqual("pair.ship_checksum_mismatch", failed[0]["code"], failed[0])
            self.assertIn("pair.ship_checksum_mismatch", [f["code"] for f in doc["findings"]])
            self.assertEqual(["0", "0"], left)
        os.rmdir(ship_dir)

    def test_a_node_directory_another_user_owns_is_refused_before_sbcast_writes(self):
        # sbcast writes the copy and every launch runs it by path: the owner of the directory
        # could swap the private directory in between. The srun step that makes it refuses.
        ship_dir = "/tmp/fabkit-ship-nodes-%d" % os.getpid()
        with SlurmCluster(nodes=2, node_private_dir=ship_dir) as c:
            bindir = os.path.join(c.dir, "bin")
            os.makedirs(bindir)
            marker = os.path.join(c.dir, "sbcast-ran")
            with open(os.path.join(bindir, "sbcast"), "w") as f:
                f.write("#!/bin/sh\ntouch %s\nexec /usr/bin/sbcast \"$@\"\n" % marker)
            os.chmod(os.path.join(bindir, "sbcast"), 0o755)
            own = "srun -N2 --ntasks-per-node=1 chown 65534:65534 %s\n" % ship_dir
            doc, left = self.run_job(c, ship_dir, path_prefix=bindir, before=own)
            failed = [s for s in doc["pair"]["steps"] if s["status"] == "failed"]
            self.assertEqual(1, len(failed), doc["pair"]["steps"])
            self.assertEqual("pair.ship_unsafe_dir", failed[0]["code"], failed[0])
            self.assertIn(ship_dir + " belongs to uid 65534", failed[0]["error"])
            self.assertIn("pair.ship_unsafe_dir", [f["code"] for f in doc["findings"]])
            self.assertFalse(os.path.exists(marker), "sbcast ran into the refused directory")
            self.assertEqual(["0", "0"], left)
        os.rmdir(ship_dir)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabcheck", required=True)
    args, rest = ap.parse_known_args()
    FABCHECK = os.path.abspath(args.fabcheck)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
