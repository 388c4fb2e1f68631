"""`fabcheck node --sysroot DIR` on a tree another user made (issue #36): fabcheck runs as root, so
the tree must not reach outside itself. A link out of it (to a root-only file) leaks nothing and
is named in the report; a FIFO is refused at once instead of hanging the probe; a symlink loop is
a named gather error, not exit 3; an absolute link inside a capture (/sys/class/net/X ->
/sys/devices/...) resolves inside DIR as it did on the captured machine; /dev/kmsg under DIR is
a regular file of the capture, and a link out of the tree there is not read either.

Run: test_sysroot_confinement.py /path/to/fabcheck
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

FABCHECK = None
SECRET = "root-only-secret-5d1c9e"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make_if(root, name, sysdir=None):
    """An up Ethernet interface's sysfs files, under sys/class/net/NAME or at sysdir."""
    d = sysdir or os.path.join(root, "sys/class/net", name)
    for k, v in (("ifindex", 7), ("iflink", 7), ("type", 1), ("flags", "0x1003"),
                 ("operstate", "up"), ("mtu", 4242)):
        write(os.path.join(d, k), "%s\n" % v)
    return d


class SysrootConfinement(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="fabkit-sysroot-")
        self.tree = os.path.join(self.tmp, "tree")
        os.makedirs(os.path.join(self.tree, "sys/class/net"))
        # The root-only file a user cannot read, outside the tree.
        self.private = os.path.join(self.tmp, "private")
        os.makedirs(self.private, mode=0o700)
        self.secret = os.path.join(self.private, "shadow")
        write(self.secret, SECRET + "\n")
        os.chmod(self.secret, 0o600)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def node(self, timeout=30):
        """fabcheck node --sysroot TREE --json: (exit code, output, parsed document or None)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("NCCL_")}
        env["HOME"] = self.tmp
        p = subprocess.run([FABCHECK, "node", "--sysroot", self.tree, "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, env=env)
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = None
        return p.returncode, p.stdout + p.stderr, doc

    def refused(self, doc, rel):
        path = os.path.join(self.tree, rel)
        return [f for f in doc["findings"]
                if f["code"] == "sysroot.file_refused" and f["subject"] == path]

    def interface(self, doc, name):
        for i in doc["net"].get("interfaces", []):
            if i.get("name") == name:
                return i
        return None

    def test_a_link_out_of_the_tree_leaks_nothing_and_is_named(self):
        d = make_if(self.tree, "eth9")
        os.remove(os.path.join(d, "operstate"))
        os.symlink(self.secret, os.path.join(d, "operstate"))  # absolute
        e = make_if(self.tree, "eth10")
        os.remove(os.path.join(e, "operstate"))
        os.symlink("../" * 12 + self.secret.lstrip("/"), os.path.join(e, "operstate"))  # relative
        rc, out, doc = self.node()
        self.assertNotIn(SECRET, out)
        self.assertIsNotNone(doc, out[-3000:])
        self.assertEqual(rc, 1, out[-3000:])  # the refusals are warnings
        for name in ("eth9", "eth10"):
            found = self.refused(doc, "sys/class/net/%s/operstate" % name)
            self.assertEqual(len(found), 1, [f for f in doc["findings"]])
            self.assertIn("leads to nothing inside " + self.tree, found[0]["message"])
            # The rest of the interface is still read from the tree.
            self.assertEqual(self.interface(doc, name)["mtu"], 4242)

    def test_a_fifo_is_refused_without_hanging(self):
        d = make_if(self.tree, "eth9")
        os.remove(os.path.join(d, "operstate"))
        os.mkfifo(os.path.join(d, "operstate"))
        os.makedirs(os.path.join(self.tree, "dev"))
        os.mkfifo(os.path.join(self.tree, "dev/kmsg"))
        try:
            rc, out, doc = self.node(timeout=30)
        except subprocess.TimeoutExpired:
            self.fail("fabcheck node hung on a FIFO in the tree (killed after 30 s)")
        self.assertIsNotNone(doc, out[-3000:])
        self.assertEqual(rc, 1, out[-3000:])
        for rel in ("sys/class/net/eth9/operstate", "dev/kmsg"):
            found = self.refused(doc, rel)
            self.assertEqual(len(found), 1, (rel, doc["findings"]))
            self.assertIn("a FIFO, not a regular file", found[0]["message"])
        self.assertFalse(doc["kernel_log"]["readable"])

    def test_a_symlink_loop_is_a_named_gather_error_not_exit_3(self):
        net = os.path.join(self.tree, "sys/class/net")
        os.symlink("loop1", os.path.join(net, "loop0"))
        os.symlink("loop0", os.path.join(net, "loop1"))
        d = make_if(self.tree, "eth9")
        os.symlink("mtu", os.path.join(d, "speed.tmp"))
        os.remove(os.path.join(d, "mtu"))
        os.rename(os.path.join(d, "speed.tmp"), os.path.join(d, "mtu"))  # mtu -> mtu
        rc, out, doc = self.node()
        self.assertNotEqual(rc, 3, out[-3000:])
        self.assertIsNotNone(doc, out[-3000:])
        self.assertEqual(rc, 1, out[-3000:])
        for rel in ("sys/class/net/loop0", "sys/class/net/loop1", "sys/class/net/eth9/mtu"):
            found = self.refused(doc, rel)
            self.assertEqual(len(found), 1, (rel, doc["findings"]))
            self.assertIn("symlink loop", found[0]["message"])
        self.assertIsNotNone(self.interface(doc, "eth9"))

    def test_an_absolute_link_inside_the_tree_resolves_inside_it(self):
        # As a capture of a real /sys may hold it; the host has no such interface.
        make_if(self.tree, None, os.path.join(self.tree, "sys/devices/virtual/net/fabtest0"))
        os.symlink("/sys/devices/virtual/net/fabtest0",
                   os.path.join(self.tree, "sys/class/net/fabtest0"))
        rc, out, doc = self.node()
        self.assertIsNotNone(doc, out[-3000:])
        i = self.interface(doc, "fabtest0")
        self.assertIsNotNone(i, json.dumps(doc["net"])[:3000])
        self.assertEqual(i["mtu"], 4242)
        self.assertEqual([f for f in doc["findings"] if f["code"] == "sysroot.file_refused"], [])

    def test_a_kmsg_link_out_of_the_tree_is_not_read(self):
        write(os.path.join(self.private, "kmsg"),
              "[ 12.500000] NVRM: Xid (PCI:0000:01:00): 79, pid=0, GPU has fallen off the bus.\n")
        os.chmod(os.path.join(self.private, "kmsg"), 0o600)
        os.makedirs(os.path.join(self.tree, "dev"))
        os.symlink(os.path.join(self.private, "kmsg"), os.path.join(self.tree, "dev/kmsg"))
        rc, out, doc = self.node()
        self.assertIsNotNone(doc, out[-3000:])
        self.assertFalse(doc["kernel_log"]["readable"], json.dumps(doc["kernel_log"])[:2000])
        self.assertEqual(doc["kernel_log"].get("records", 0), 0)
        self.assertEqual(len(self.refused(doc, "dev/kmsg")), 1, doc["findings"])
        # A capture's regular file is read as before.
        os.remove(os.path.join(self.tree, "dev/kmsg"))
        shutil.copy(os.path.join(self.private, "kmsg"), os.path.join(self.tree, "dev/kmsg"))
        rc, out, doc = self.node()
        self.assertTrue(doc["kernel_log"]["readable"], json.dumps(doc["kernel_log"])[:2000])
        self.assertEqual(doc["kernel_log"]["records"], 1)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_sysroot_confinement.py /path/to/fabcheck")
    FABCHECK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
