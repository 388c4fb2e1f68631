"""The fabkit-fabcheck .deb (cpack -G DEB) installed into a clean Debian 12 root that mmdebstrap
makes from the Debian mirror: apt installs the package and exactly the dependencies it declares
(computed by dpkg-shlibdeps), and `fabcheck node --json` then runs inside the root (chroot), which
proves they suffice. Network and root needed (skipped otherwise, exit 77); a few minutes
(docs/install.md has the measured time).

    test_deb_chroot.py --build BUILD --version X.Y.Z [--mirror URL] [--keep]
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

ARGS = None


def debian_mirror():
    """The mirror this machine's apt uses (deb822 sources or sources.list), else deb.debian.org."""
    if os.environ.get("FABKIT_DEBIAN_MIRROR"):
        return os.environ["FABKIT_DEBIAN_MIRROR"]
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        with open(path) as f:
            for line in f:
                if line.startswith("URIs:") and "security" not in line:
                    return line.split()[1]
    return "http://deb.debian.org/debian"


class DebInCleanRoot(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="fabkit-deb-")
        if not ARGS.keep:
            self.addCleanup(shutil.rmtree, self.work, True)

    def test_package_installs_into_a_clean_bookworm_root_and_runs(self):
        t0 = time.monotonic()
        r = subprocess.run(["cpack", "-G", "DEB", "--config", os.path.join(ARGS.build, "CPackConfig.cmake"),
                            "-B", self.work], capture_output=True, text=True, timeout=600)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)
        debs = glob.glob(os.path.join(self.work, "fabkit-fabcheck_*.deb"))
        self.assertEqual(1, len(debs), os.listdir(self.work))
        deb = debs[0]
        field = lambda name: subprocess.run(["dpkg-deb", "-f", deb, name], capture_output=True, text=True,
                                            check=True).stdout.strip()
        self.assertEqual("fabkit-fabcheck", field("Package"))
        self.assertEqual(ARGS.version, field("Version"))
        depends = field("Depends")
        # Computed from the binary's NEEDED libraries, not listed by hand.
        for lib in ("libc6", "libstdc++6", "libhwloc15", "libibverbs1", "libibumad3", "libssl3"):
            self.assertIn(lib, depends)
        listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True, check=True).stdout
        self.assertIn("./usr/bin/fabcheck", listing)
        self.assertNotIn("libtorch", listing)
        self.assertNotIn(".debug", listing)  # debug info stays out of the package
        print("\n  %s: %.1f MB; Depends: %s" % (os.path.basename(deb), os.path.getsize(deb) / 1e6, depends),
              file=sys.stderr)
        t_pack = time.monotonic() - t0

        root = os.path.join(self.work, "root")
        mirror = debian_mirror()
        r = subprocess.run(["mmdebstrap", "--variant=minbase", "--quiet", "--include=" + deb,
                            "--hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount",
                            "bookworm", root, mirror], capture_output=True, text=True, timeout=1100)
        if r.returncode != 0 and ("Could not resolve" in r.stderr or "Failed to fetch" in r.stderr):
            self.skipTest("the Debian mirror %s is not reachable: %s" % (mirror, r.stderr[-500:]))
        self.assertEqual(0, r.returncode, r.stderr[-3000:])
        t_root = time.monotonic() - t0 - t_pack

        # /proc and /sys inside the root for the node check, in a mount namespace of its own so
        # nothing stays mounted.
        script = ('mount -t proc proc "$1/proc" && mount --rbind /sys "$1/sys" && '
                  'exec chroot "$1" /usr/bin/fabcheck node --json')
        r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "run", root],
                           capture_output=True, text=True, timeout=120)
        self.assertIn(r.returncode, (0, 1), r.stderr[-2000:])
        doc = json.loads(r.stdout)
        self.assertEqual("node", doc["kind"])
        self.assertEqual(ARGS.version, doc["build"]["fabkit_version"])
        r = subprocess.run(["chroot", root, "dpkg-query", "-W", "-f", "${Version}", "fabkit-fabcheck"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(ARGS.version, r.stdout.strip())
        print("  cpack %.0f s, mmdebstrap + install %.0f s (mirror %s)" % (t_pack, t_root, mirror), file=sys.stderr)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the root and the .deb (printed path)")
    ARGS, rest = ap.parse_known_args()
    ARGS.build = os.path.realpath(ARGS.build)
    if os.geteuid() != 0:
        print("skipped: mmdebstrap's root mode and chroot need root")
        sys.exit(77)
    if shutil.which("mmdebstrap") is None:
        print("skipped: mmdebstrap is not installed (scripts/debian-packages.txt lists it)")
        sys.exit(77)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
