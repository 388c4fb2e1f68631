"""What every soft-RoCE VM test shares: its arguments (--fabcheck, the release binary the image
holds and the controller runs; --image, what tests/vm/build-image made) and the skip rule: exit 77
naming what this machine lacks (no kernel package, no qemu, no tap device), never a silent pass."""
import argparse
import os
import shutil
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from vm_cluster import Skip, VmCluster  # noqa: E402,F401

SKIP = 77
ARGS = argparse.Namespace(fabcheck=None, image=None)


def missing():
    """Why the VM tests cannot run here, or None."""
    reason_file = os.path.join(ARGS.image, "skip-reason")
    if os.path.exists(reason_file):
        with open(reason_file) as f:
            return f.read().strip()
    if not os.path.exists(os.path.join(ARGS.image, "initrd.gz")):
        return "no VM image in %s (the vm_image test builds it: tests/vm/build-image)" % ARGS.image
    if not shutil.which("qemu-system-x86_64"):
        return "qemu-system-x86_64 not installed (package qemu-system-x86; scripts/setup)"
    if os.geteuid() != 0:
        return "the VM tests make a network namespace and taps: run as root"
    if not os.path.exists("/dev/net/tun"):
        return "/dev/net/tun is missing: the VMs' taps cannot be made"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabcheck", required=True)
    ap.add_argument("--image", required=True)
    args, rest = ap.parse_known_args()
    ARGS.fabcheck = os.path.abspath(args.fabcheck)
    ARGS.image = os.path.abspath(args.image)
    why = missing()
    if why:
        print("SKIP: %s" % why)
        sys.exit(SKIP)
    prog = unittest.main(module="__main__", argv=[sys.argv[0]] + rest, verbosity=2, exit=False)
    sys.exit(0 if prog.result.wasSuccessful() else 1)


def cluster(n, **kw):
    return VmCluster(ARGS.image, n=n, **kw)
