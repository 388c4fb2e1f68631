"""Soft-RoCE test nodes: qemu VMs, one Debian kernel each with rdma_rxe over its eth0 (Python 3
stdlib only). Each VM is a node of its own, as two RoCE hosts are: one kernel with two network
namespaces moves no RDMA data (rxe's UDP socket lives in the initial namespace).

    with VmCluster(image_dir, n=2) as c:
        c.addr(0)                       # "198.18.60.11": node 0's eth0 (rxe0 sits on it)
        c.ssh(0, "fabcheck node --json")  # a command on node 0 (its stdout, stderr, exit status)
        c.controller([fabcheck, "pair", c.addr(0), c.addr(1), "--launcher", c.launcher])

Layout: a namespace this object creates holds bridge br0, the controller's address 198.18.60.1/24
and one tap per VM; qemu runs in that namespace with its virtio-net on the tap, so nothing of
the test reaches the root namespace. The controller (fabcheck pair/cluster) runs in the namespace
and starts agents with its ssh launcher against sshd in each VM (tests/vm/init). `shape_link(i, j, rate)`
slows the link between nodes i and j both ways (htb on their taps). Everything is torn down on exit,
at interpreter exit and on SIGTERM.

The VM's accelerator: KVM when a probe VM booted under it within its budget (tests/vm/prepare
records the answer in the image directory), TCG otherwise (measured here: nested KVM hangs after
"Probing EDD"; TCG boots in ~4 s). FABKIT_VM_ACCEL=tcg|kvm forces one.
"""
import atexit
import os
import random
import shutil
import signal
import string
import subprocess
import tempfile
import time

_LIVE = []
BOOT_BUDGET_S = float(os.environ.get("FABKIT_VM_BOOT_S", "90"))


def _cleanup_all():
    for c in list(_LIVE):
        c.close()


atexit.register(_cleanup_all)


def _on_term(signum, frame):
    _cleanup_all()
    raise SystemExit(128 + signum)


class VmError(RuntimeError):
    pass


class Skip(Exception):
    """What this machine lacks for the VM tests (the tests skip naming it)."""


def build_image(source_dir, image_dir, fabcheck):
    """Builds (or reuses) the image; raises Skip naming what is missing."""
    r = subprocess.run([os.path.join(source_dir, "tests", "vm", "build-image"), image_dir, fabcheck],
                       capture_output=True, text=True)
    if r.returncode == 77:
        raise Skip(r.stderr.strip())
    if r.returncode != 0:
        raise VmError("tests/vm/build-image failed (exit %d): %s" % (r.returncode, r.stderr[-2000:]))


def recorded_accel(image_dir):
    """The accelerator tests/vm/prepare's probe chose for this image: "kvm" or "tcg"."""
    try:
        with open(os.path.join(image_dir, "accel")) as f:
            word = f.read().split()[0]
        return word if word in ("kvm", "tcg") else "tcg"
    except (OSError, IndexError):
        return "tcg"


def qemu_argv(image_dir, accel, cmdline, extra):
    return ["qemu-system-x86_64", "-accel", accel, "-cpu", "max",
            "-nographic", "-no-reboot", "-kernel", os.path.join(image_dir, "vmlinuz"),
            "-initrd", os.path.join(image_dir, "initrd.gz"), "-append", " ".join(cmdline)] + extra


def _run(argv, check=True, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise VmError("%s: exit %d: %s" % (" ".join(argv), r.returncode, r.stderr.strip()))
    return r


class VmCluster:
    def __init__(self, image_dir, n=2, memory_mb=512, node_options=None, accel=None):
        """node_options: {index: {"memlock": KIB, "rxe": False, "mtu": BYTES, "nccl_gid_index": N}}
        (tests/vm/init's kernel flags)."""
        if not shutil.which("qemu-system-x86_64"):
            raise Skip("qemu-system-x86_64 not installed (package qemu-system-x86; scripts/setup)")
        if not os.path.exists("/dev/net/tun"):
            raise Skip("/dev/net/tun is missing: the VMs' taps cannot be made")
        self.image = image_dir
        self.n = n
        self.memory_mb = memory_mb
        self.node_options = node_options or {}
        self.accel = accel or os.environ.get("FABKIT_VM_ACCEL") or recorded_accel(image_dir)
        tag = "%d%s" % (os.getpid() % 100000, "".join(random.choice(string.ascii_lowercase) for _ in range(3)))
        self.ns = "fabvm" + tag
        self.dir = tempfile.mkdtemp(prefix="fabkit-vm-")
        self.procs = []
        self.consoles = []
        self.launcher = "ssh -F %s/ssh_config {host}" % image_dir
        self._closed = False

    def addr(self, i):
        return "198.18.60.%d" % (11 + i)

    # --- lifecycle -------------------------------------------------------------------------
    def __enter__(self):
        _LIVE.append(self)
        signal.signal(signal.SIGTERM, _on_term)
        try:
            self._network()
            for i in range(self.n):
                self._start(i)
            self._await_ready()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._closed:
            return
        self._closed = True
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)
        if self in _LIVE:
            _LIVE.remove(self)

    def _network(self):
        _run(["ip", "netns", "add", self.ns])
        ns = ["ip", "-n", self.ns]
        _run(ns + ["link", "set", "lo", "up"])
        _run(ns + ["link", "add", "br0", "type", "bridge"])
        _run(ns + ["link", "set", "br0", "mtu", "9000"])
        _run(ns + ["addr", "add", "198.18.60.1/24", "dev", "br0"])
        _run(ns + ["link", "set", "br0", "up"])
        for i in range(self.n):
            tap = "tap%d" % i
            _run(ns + ["tuntap", "add", "dev", tap, "mode", "tap"])
            _run(ns + ["link", "set", tap, "mtu", "9000"])
            _run(ns + ["link", "set", tap, "master", "br0"])
            _run(ns + ["link", "set", tap, "up"])

    def _start(self, i):
        opts = self.node_options.get(i, {})
        cmdline = ["console=ttyS0", "panic=-1", "quiet", "fabvm.name=vm%d" % i,
                   "fabvm.addr=%s/24" % self.addr(i)]
        if "memlock" in opts:
            cmdline.append("fabvm.memlock=%d" % opts["memlock"])
        if opts.get("rxe", True) is False:
            cmdline.append("fabvm.rxe=0")
        if "nccl_gid_index" in opts:
            cmdline.append("fabvm.nccl_gid_index=%d" % opts["nccl_gid_index"])
        if "mtu" in opts:
            cmdline.append("fabvm.mtu=%d" % opts["mtu"])
        mac = "52:54:00:60:00:%02x" % (11 + i)
        argv = ["ip", "netns", "exec", self.ns] + qemu_argv(
            self.image, self.accel, cmdline,
            ["-m", str(self.memory_mb), "-smp", "1",
             "-netdev", "tap,id=n0,ifname=tap%d,script=no,downscript=no" % i,
             "-device", "virtio-net-pci,netdev=n0,mac=%s" % mac, "-nic", "none"])
        console = os.path.join(self.dir, "console-%d.log" % i)
        self.consoles.append(console)
        with open(console, "w") as out:
            self.procs.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                               stderr=subprocess.STDOUT))

    def console_tail(self, i, lines=25):
        try:
            with open(self.consoles[i], errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError as e:
            return "(no console: %s)" % e

    def _await_ready(self):
        deadline = time.monotonic() + BOOT_BUDGET_S
        pending = set(range(self.n))
        while pending:
            for i in sorted(pending):
                with open(self.consoles[i], errors="replace") as f:
                    text = f.read()
                if "FABVM-READY vm%d" % i in text:
                    pending.discard(i)
                elif "FABVM-FAILED" in text or self.procs[i].poll() is not None:
                    raise VmError("VM %d (%s) failed to start; console tail:\n%s" %
                                  (i, self.accel, self.console_tail(i)))
            if pending and time.monotonic() > deadline:
                i = min(pending)
                raise VmError("VM %d did not boot within %.0f s under %s; killed. Console tail:\n%s" %
                              (i, BOOT_BUDGET_S, self.accel, self.console_tail(i)))
            time.sleep(0.2)
        # sshd is started just before the marker; the first login proves the node answers.
        for i in range(self.n):
            self.ssh(i, "true", timeout=60, check=True)

    # --- using the nodes -------------------------------------------------------------------
    def in_ns(self, argv, timeout=300, **kw):
        """A command in the namespace of the bridge (the controller's host)."""
        return subprocess.run(["ip", "netns", "exec", self.ns] + list(argv), capture_output=True,
                              text=True, timeout=timeout, **kw)

    def ssh_argv(self, i, command):
        """The argv that runs `command` on node i over ssh, from the bridge's namespace."""
        return ["ip", "netns", "exec", self.ns, "ssh", "-F", os.path.join(self.image, "ssh_config"),
                "-o", "BatchMode=yes", self.addr(i), command]

    def ssh(self, i, command, timeout=300, check=False, **kw):
        r = subprocess.run(self.ssh_argv(i, command), capture_output=True, text=True, timeout=timeout, **kw)
        if check and r.returncode != 0:
            raise VmError("on vm%d: %s: exit %d: %s%s" % (i, command, r.returncode, r.stderr.strip(),
                                                         r.stdout.strip()))
        return r

    def ssh_background(self, i, command):
        return subprocess.Popen(self.ssh_argv(i, command), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def controller(self, argv, timeout=300):
        return self.in_ns(argv, timeout=timeout)

    def shape_link(self, i, j, rate="20mbit"):
        """The link between nodes i and j slowed both ways (as a bad cable or a flapping port slows
        one path): htb on each node's tap sends the frames from the other node to a class at
        `rate` (a u32 match on the IPv4 source: TCP and RoCE v2's UDP alike); all other traffic
        passes unshaped."""
        for dst, src in ((i, j), (j, i)):
            dev = "tap%d" % dst
            tc = ["tc", "-n", self.ns]
            for argv in (tc + ["qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "10"],
                         tc + ["class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb",
                               "rate", "100gbit"],
                         tc + ["class", "add", "dev", dev, "parent", "1:", "classid", "1:20", "htb",
                               "rate", rate],
                         tc + ["filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "u32",
                               "match", "ip", "src", self.addr(src) + "/32", "flowid", "1:20"]):
                _run(argv)
