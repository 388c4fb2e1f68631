"""fabtrain installed (`cmake --install --component fabtrain`, the TGZ's contents) runs from the
prefix with the build tree hidden: libexec/fabkit/fabtrain has no RUNPATH (alone it cannot find
LibTorch), and bin/fabtrain, the launcher, finds the torch wheel through the given Python.

    test_fabtrain_install.py --build BUILD --python PYTHON_WITH_TORCH
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ARGS = None


class FabtrainFromPrefix(unittest.TestCase):
    def setUp(self):
        self.stage = tempfile.mkdtemp(prefix="fabkit-fabtrain-")
        self.addCleanup(shutil.rmtree, self.stage, True)
        r = subprocess.run(["cmake", "--install", ARGS.build, "--prefix", self.stage, "--component", "fabtrain"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)

    def hidden(self, argv, env=None):
        script = 'mount -t tmpfs fabkit-hidden "$0" && exec "$@"'
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, ARGS.build,
                               *argv], capture_output=True, text=True, timeout=120, env=env)

    def test_launcher_finds_the_wheel_and_the_binary_alone_does_not(self):
        real = os.path.join(self.stage, "libexec", "fabkit", "fabtrain")
        dyn = subprocess.run(["readelf", "-d", "-W", real], capture_output=True, text=True, check=True).stdout
        self.assertNotIn("RUNPATH", dyn)
        self.assertTrue(os.path.exists(os.path.join(self.stage, "libexec", "fabkit", "libfabkit_sentencepiece_shim.so")))
        r = self.hidden([real, "--help"])
        self.assertNotEqual(0, r.returncode)
        self.assertIn("libtorch", r.stderr)
        env = dict(os.environ, FABKIT_PYTHON=ARGS.python)
        r = self.hidden([os.path.join(self.stage, "bin", "fabtrain"), "--help"], env=env)
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertIn("fabtrain", r.stdout)
        env = dict(os.environ, FABKIT_PYTHON="/bin/false")
        r = self.hidden([os.path.join(self.stage, "bin", "fabtrain"), "--help"], env=env)
        self.assertEqual(2, r.returncode)
        self.assertIn("no torch wheel found", r.stderr)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--python", required=True)
    ARGS, rest = ap.parse_known_args()
    ARGS.build = os.path.realpath(ARGS.build)
    if os.geteuid() != 0:
        print("skipped: hiding the build tree needs root (a private mount namespace)")
        sys.exit(77)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
