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


    def torch_lib(self):
        r = subprocess.run([ARGS.python, "-I", "-c", "import importlib.util as u; print(u.find_spec('torch').submodule_search_locations[0])"],
                           capture_output=True, text=True, check=True, cwd="/")
        return os.path.join(r.stdout.strip(), "lib")

    def test_a_torch_in_the_current_directory_is_not_loaded(self):
        # Root running `fabtrain control list` in a user's directory: `python3 -c` put that
        # directory first on sys.path, so its ./torch won, and ./torch/lib went first on
        # LD_LIBRARY_PATH. A library there that cannot load makes fabtrain fail if it is used.
        cwd = tempfile.mkdtemp(prefix="fabkit-cwd-")
        self.addCleanup(shutil.rmtree, cwd, True)
        os.makedirs(os.path.join(cwd, "torch", "lib"))
        open(os.path.join(cwd, "torch", "__init__.py"), "w").close()
        for name in os.listdir(self.torch_lib()):
            if name.endswith(".so") or ".so." in name:
                with open(os.path.join(cwd, "torch", "lib", name), "w") as f:
                    f.write("not a library\n")
        env = dict(os.environ, FABKIT_PYTHON=ARGS.python)
        r = subprocess.run([os.path.join(self.stage, "bin", "fabtrain"), "--help"], capture_output=True, text=True,
                           timeout=120, env=env, cwd=cwd)
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertIn("fabtrain", r.stdout)

    def test_torch_libraries_another_user_owns_are_refused(self):
        # FABKIT_TORCH_DIR naming a copy another user controls: links to the real libraries (so
        # fabtrain would start with them) in a directory of uid 65534's, who could swap them.
        fake = tempfile.mkdtemp(prefix="fabkit-torch-")
        self.addCleanup(shutil.rmtree, fake, True)
        os.chmod(fake, 0o755)
        lib = os.path.join(fake, "lib")
        os.mkdir(lib)
        for name in os.listdir(self.torch_lib()):
            os.symlink(os.path.join(self.torch_lib(), name), os.path.join(lib, name))
        os.chown(lib, 65534, 65534)
        env = dict(os.environ, FABKIT_TORCH_DIR=fake)
        r = subprocess.run([os.path.join(self.stage, "bin", "fabtrain"), "--help"], capture_output=True, text=True,
                           timeout=120, env=env)
        self.assertEqual(2, r.returncode, r.stdout + r.stderr)
        self.assertIn("refusing the torch libraries in " + lib + ": " + lib + " belongs to uid 65534", r.stderr)

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
