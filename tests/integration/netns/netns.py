"""Network-namespace test hosts (Python 3 stdlib only), reusable by any integration test.

    with NetnsWorld(hosts=2, decoys=True, controller=True) as w:
        w.hosts        # ["fk1234ab-h0", "fk1234ab-h1"]: ns names, usable as --launcher 'ip netns exec {host}'
        w.addr(0)      # "198.18.1.10": host 0's address on the shared bridge (the right interface)
        w.run(0, "nft", ...)     # a command inside host 0's namespace
        w.ctl          # ns name of a controller host on the bridge (when controller=True)

Layout (all of it inside namespaces this object creates; the root namespace is not touched, so
its default route can never carry test traffic):
  - a switch namespace holding bridge br0; every host (and the controller) has "fab0" on it,
    198.18.1.0/24: host i = 198.18.1.(10+i), controller = 198.18.1.2.
  - decoys=True adds two wrong interfaces per host:
      "slow0": a veth straight to the next host (pairs 0-1, 2-3, ...), 198.18.2.0/24, shaped with
               tbf to `slow_rate` (no netem on this kernel): reachable but slower;
      "dead0": a veth whose peer sits unbridged in the switch namespace, on a subnet of its own
               (198.18.(3+i).10/24): up and running, reaches nothing.
Names carry the pid and random letters, so parallel runs don't collide; __exit__ (and atexit, and
SIGTERM) delete every namespace, which removes their links.
"""
import atexit
import os
import random
import shutil
import signal
import string
import subprocess

_LIVE = []


def _cleanup_all():
    for w in list(_LIVE):
        w.close()


atexit.register(_cleanup_all)


def _on_term(signum, frame):
    _cleanup_all()
    raise SystemExit(128 + signum)


class NetnsError(RuntimeError):
    pass


def shape_to_peer(ns, dev, peer_addr, rate="20mbit"):
    """Slow the traffic that namespace `ns` sends out of `dev` to one peer address only: htb sends
    it to class 1:20, whose leaf qdisc is a tbf at `rate`; everything else goes through class 1:10
    unshaped. (This kernel has tbf and htb with u32 filters, but neither netem nor prio.) Shape
    both ends for a slow link in both directions."""
    def tc(*argv):
        r = subprocess.run(["tc", "-n", ns, *argv], capture_output=True, text=True)
        if r.returncode != 0:
            raise NetnsError("tc %s: %s" % (" ".join(argv), r.stderr.strip()))
    tc("qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10")
    tc("class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate", "100gbit")
    tc("class", "add", "dev", dev, "parent", "1:", "classid", "1:20", "htb", "rate", "100gbit")
    tc("qdisc", "add", "dev", dev, "parent", "1:20", "handle", "20:", "tbf", "rate", rate,
       "burst", "32kbit", "latency", "100ms")
    tc("filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
       "match", "ip", "dst", peer_addr + "/32", "flowid", "1:20")


def have_root_and_netns():
    """(ok, reason): tests skip with the reason when they cannot make namespaces."""
    if os.geteuid() != 0:
        return False, "needs root to create network namespaces"
    if shutil.which("ip") is None:
        return False, "no `ip` command (iproute2 is not installed)"
    probe = "fkprobe%d" % os.getpid()
    try:
        r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return False, "ip netns add did not answer within 10 s"
    if r.returncode != 0:
        return False, "ip netns add failed: " + r.stderr.strip()
    # A container may let a namespace be made but not entered (`ip netns exec` remounts /sys,
    # which needs CAP_SYS_ADMIN over the mount namespace) or refuse veth or bridge links (a kernel
    # without the modules, a seccomp profile): try each part NetnsWorld uses, so the reason names
    # the one that is missing instead of a world that fails half-built.
    try:
        for argv, what in ((["ip", "netns", "exec", probe, "true"], "ip netns exec"),
                           (["ip", "-n", probe, "link", "add", "fkp0", "type", "veth", "peer", "name", "fkp1"],
                            "a veth link inside a namespace"),
                           (["ip", "-n", probe, "link", "add", "fkpbr", "type", "bridge"],
                            "a bridge inside a namespace")):
            try:
                r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            except subprocess.TimeoutExpired:
                return False, "%s did not answer within 10 s" % what
            if r.returncode != 0:
                return False, "%s failed: %s" % (what, (r.stderr or r.stdout).strip() or "exit %d" % r.returncode)
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=30)
    return True, ""


class NetnsWorld:
    def __init__(self, hosts=2, decoys=True, controller=True, slow_rate="20mbit"):
        tag = "fk%d%s" % (os.getpid() % 100000, "".join(random.choice(string.ascii_lowercase) for _ in range(3)))
        self.tag = tag
        self.switch = tag + "-sw"
        self.hosts = ["%s-h%d" % (tag, i) for i in range(hosts)]
        self.ctl = tag + "-ctl" if controller else None
        self.decoys = decoys
        self.slow_rate = slow_rate
        self._made = []
        self._closed = False
        self._neigh_saved = None

    # -- helpers ------------------------------------------------------------------------------
    def sh(self, *argv, check=True, timeout=30):
        r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise NetnsError("%s: exit %d: %s" % (" ".join(argv), r.returncode, r.stderr.strip()))
        return r

    def run(self, host, *argv, check=True, timeout=30):
        ns = self.hosts[host] if isinstance(host, int) else host
        return self.sh("ip", "netns", "exec", ns, *argv, check=check, timeout=timeout)

    def addr(self, i):
        return "198.18.1.%d" % (10 + i)

    def slow_addr(self, i):
        return "198.18.2.%d" % (10 + i)

    def dead_addr(self, i):
        return "198.18.%d.10" % (3 + i)

    def pids(self, host):
        ns = self.hosts[host] if isinstance(host, int) else host
        r = self.sh("ip", "netns", "pids", ns, check=False)
        return [int(p) for p in r.stdout.split()]

    # -- setup / teardown ---------------------------------------------------------------------
    def _netns(self, name):
        self.sh("ip", "netns", "add", name)
        self._made.append(name)
        self.sh("ip", "-n", name, "link", "set", "lo", "up")

    def _attach(self, ns, idx, addr):
        port = "p%d" % idx
        self.sh("ip", "-n", self.switch, "link", "add", port, "type", "veth", "peer", "name", "fab0", "netns", ns)
        self.sh("ip", "-n", self.switch, "link", "set", port, "master", "br0", "up")
        self.sh("ip", "-n", ns, "addr", "add", addr + "/24", "dev", "fab0")
        self.sh("ip", "-n", ns, "link", "set", "fab0", "up")

    # The kernel's ARP table is one table for every namespace (only its entries are per
    # namespace), sized by the init namespace's gc_thresh1..3 (128 / 512 / 1024 by default). A
    # world whose hosts all talk to each other (N hosts: N(N+1) entries, 992 at 32) fills it within
    # seconds of the cluster search's group tests, and then "neighbor table overflow" drops the
    # SYNs of new connections: a test machine's limit, not the fabric's (a cluster node holds its
    # own table). Raised for the world's life when it would not fit, put back on close.
    _NEIGH = ["/proc/sys/net/ipv4/neigh/default/gc_thresh%d" % k for k in (1, 2, 3)]

    def _read_neighbour_table(self):
        values = []
        for p in self._NEIGH:
            with open(p) as f:
                values.append(int(f.read()))
        return values

    def _size_neighbour_table(self):
        need = (len(self.hosts) + 2) * (len(self.hosts) + 2)
        try:
            now = self._read_neighbour_table()
        except (OSError, ValueError):
            return
        want = [max(now[0], need), max(now[1], 2 * need), max(now[2], 4 * need)]
        if want == now:
            return
        try:
            for p, v in zip(self._NEIGH, want):
                with open(p, "w") as f:
                    f.write(str(v))
            self._neigh_saved = (now, want)
        except OSError:
            pass

    def _restore_neighbour_table(self):
        if not self._neigh_saved:
            return
        old, ours = self._neigh_saved
        self._neigh_saved = None
        try:
            # Only what this world set: another world may have raised them since, and keeps them.
            if self._read_neighbour_table() != ours:
                return
            for p, v in reversed(list(zip(self._NEIGH, old))):
                with open(p, "w") as f:
                    f.write(str(v))
        except (OSError, ValueError):
            pass

    def __enter__(self):
        _LIVE.append(self)
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _on_term)
        try:
            self._size_neighbour_table()
            self._netns(self.switch)
            self.sh("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
            self.sh("ip", "-n", self.switch, "link", "set", "br0", "up")
            for i, ns in enumerate(self.hosts):
                self._netns(ns)
                self._attach(ns, i, self.addr(i))
            if self.ctl:
                self._netns(self.ctl)
                self._attach(self.ctl, 99, "198.18.1.2")
            if self.decoys:
                for i in range(0, len(self.hosts) - 1, 2):
                    a, b = self.hosts[i], self.hosts[i + 1]
                    # Create both ends in a, then move and rename: creating the peer straight into
                    # b under the same name left it without carrier on this kernel (6.x).
                    self.sh("ip", "-n", a, "link", "add", "slow0", "type", "veth", "peer", "name", "slowp")
                    self.sh("ip", "-n", a, "link", "set", "slowp", "netns", b)
                    self.sh("ip", "-n", b, "link", "set", "slowp", "name", "slow0")
                    for j, ns in ((i, a), (i + 1, b)):
                        self.sh("ip", "-n", ns, "addr", "add", self.slow_addr(j) + "/24", "dev", "slow0")
                        self.sh("ip", "-n", ns, "link", "set", "slow0", "up")
                        self.sh("tc", "-n", ns, "qdisc", "add", "dev", "slow0", "root", "tbf", "rate",
                                self.slow_rate, "burst", "32kbit", "latency", "100ms")
                for i, ns in enumerate(self.hosts):
                    peer = "d%d" % i
                    self.sh("ip", "-n", self.switch, "link", "add", peer, "type", "veth", "peer", "name", "dead0", "netns", ns)
                    self.sh("ip", "-n", self.switch, "link", "set", peer, "up")
                    self.sh("ip", "-n", ns, "addr", "add", self.dead_addr(i) + "/24", "dev", "dead0")
                    self.sh("ip", "-n", ns, "link", "set", "dead0", "up")
        except BaseException:
            self.close()
            raise
        return self

    def close(self):
        if self._closed:
            return
        self._closed = True
        for ns in reversed(self._made):
            # Kill what still runs inside (agents a test left behind), then delete the namespace.
            for pid in self.pids(ns):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self._restore_neighbour_table()
        if self in _LIVE:
            _LIVE.remove(self)

    def __exit__(self, *exc):
        self.close()
        return False
