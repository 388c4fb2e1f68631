"""A real Slurm cluster on this machine for tests: munged + slurmctld + slurmd from Debian's
slurm-wlm, configured in a temp dir, stopped by PID. nodes=1 runs one slurmd on this host;
nodes=2..4 puts each slurmd in its own network namespace on a bridge (slurmd entered with
nsenter, since `ip netns exec` remounts /sys and slurmd then fails on cgroups: docs/architecture.md,
"Facts that shaped the code").

Usage:
    with SlurmCluster(nodes=2) as c:
        out = c.run(["srun", "-N2", "hostname"])
Everything it creates (namespaces, bridge, daemons, temp dir) is removed on exit, also on error.
"""
import os
import shutil
import signal
import subprocess
import tempfile
import time


def _sh(cmd, check=True):
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class SlurmError(RuntimeError):
    pass


class SlurmCluster:
    def __init__(self, nodes=1, tag=None, start_timeout_s=30, node_private_dir=None):
        if nodes not in (1, 2, 3, 4):
            raise ValueError("nodes must be 1 to 4")
        self.nodes = nodes
        self.tag = tag or "fk%d" % (os.getpid() % 100000)
        # A /24 and ports derived from the PID so parallel runs don't collide.
        self.subnet = 100 + os.getpid() % 100
        self.ctld_port = 20000 + (os.getpid() % 5000) * 2
        self.start_timeout_s = start_timeout_s
        # A directory that is each node's own, as /tmp is on real nodes (nodes >= 2): every slurmd
        # runs in a mount namespace of its own with an empty tmpfs there, and so do its jobs.
        self.node_private_dir = node_private_dir
        self.dir = None
        self.procs = []
        self.netns = []
        self.links = []
        self.node_names = []
        self.node_addrs = {}

    # -- network -----------------------------------------------------------------------------
    def _setup_network(self):
        self.bridge = "br" + self.tag
        _sh(["ip", "link", "add", self.bridge, "type", "bridge"])
        self.links.append(self.bridge)
        _sh(["ip", "addr", "add", "198.18.%d.1/24" % self.subnet, "dev", self.bridge])
        _sh(["ip", "link", "set", self.bridge, "up"])
        for i in range(1, self.nodes + 1):
            ns = "%s-n%d" % (self.tag, i)
            host_if, ns_if = "v%sh%d" % (self.tag, i), "v%sn%d" % (self.tag, i)
            _sh(["ip", "netns", "add", ns])
            self.netns.append(ns)
            _sh(["ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if])
            self.links.append(host_if)
            _sh(["ip", "link", "set", ns_if, "netns", ns])
            _sh(["ip", "link", "set", host_if, "master", self.bridge])
            _sh(["ip", "link", "set", host_if, "up"])
            addr = "198.18.%d.%d" % (self.subnet, 10 + i)
            _sh(["ip", "-n", ns, "addr", "add", addr + "/24", "dev", ns_if])
            _sh(["ip", "-n", ns, "link", "set", ns_if, "up"])
            _sh(["ip", "-n", ns, "link", "set", "lo", "up"])
            name = "node%d" % i
            self.node_names.append(name)
            self.node_addrs[name] = addr

    # -- config ------------------------------------------------------------------------------
    def _write_conf(self):
        d = self.dir
        host = os.uname().nodename
        if self.nodes == 1:
            ctld = host
            nodes = "NodeName=%s CPUs=%d State=UNKNOWN" % (host, os.cpu_count() or 1)
            self.node_names = [host]
        else:
            ctld = "%s(198.18.%d.1)" % (host, self.subnet)
            nodes = "\n".join(
                "NodeName=%s NodeAddr=%s NodeHostname=%s CPUs=%d State=UNKNOWN"
                % (n, self.node_addrs[n], n, os.cpu_count() or 1) for n in self.node_names)
        conf = f"""ClusterName=fabkit{self.tag}
SlurmctldHost={ctld}
SlurmUser=root
SlurmdUser=root
SlurmctldPort={self.ctld_port}
SlurmdPort={self.ctld_port + 1}
AuthType=auth/munge
AuthInfo=socket={d}/munge.socket
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool-%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
{nodes}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""
        self.conf = os.path.join(d, "slurm.conf")
        with open(self.conf, "w") as f:
            f.write(conf)

    # -- daemons -----------------------------------------------------------------------------
    def _spawn(self, argv, log):
        out = open(os.path.join(self.dir, "log", log), "w")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=self.env(),
                             start_new_session=True)
        self.procs.append(p)
        return p

    def env(self, extra=None):
        e = dict(os.environ)
        e["SLURM_CONF"] = self.conf
        if extra:
            e.update(extra)
        return e

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="fabkit-slurm-")
        for sub in ("state", "log"):
            os.makedirs(os.path.join(self.dir, sub))
        try:
            if self.nodes >= 2:
                self._setup_network()
            self._write_conf()
            d = self.dir
            _sh(["munged", "-f", "-S", d + "/munge.socket", "--pid-file=" + d + "/munged.pid",
                 "--log-file=" + d + "/log/munged.log", "--seed-file=" + d + "/munged.seed"])
            self._spawn(["slurmctld", "-D", "-f", self.conf], "slurmctld.out")
            if self.nodes == 1:
                self._spawn(["slurmd", "-D", "-f", self.conf], "slurmd.out")
            else:
                for ns, name in zip(self.netns, self.node_names):
                    slurmd = ["slurmd", "-D", "-f", self.conf, "-N", name]
                    if self.node_private_dir:
                        os.makedirs(self.node_private_dir, exist_ok=True)
                        slurmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                                  'mount -t tmpfs -o mode=1777 fabkit-node "$0" && exec "$@"',
                                  self.node_private_dir] + slurmd
                    self._spawn(["nsenter", "--net=/var/run/netns/" + ns] + slurmd, "slurmd-%s.out" % name)
            self._wait_idle()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_idle(self):
        deadline = time.time() + self.start_timeout_s
        last = ""
        while time.time() < deadline:
            r = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=self.env(),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            last = r.stdout
            states = [l.split()[1] for l in r.stdout.splitlines() if len(l.split()) == 2]
            if len(states) == self.nodes and all(s.startswith("idle") for s in states):
                return
            time.sleep(0.5)
        raise SlurmError("slurm nodes not idle after %ds: %s\n%s" % (self.start_timeout_s, last, self.logs()))

    def logs(self):
        out = []
        for f in sorted(os.listdir(os.path.join(self.dir, "log"))):
            with open(os.path.join(self.dir, "log", f), errors="replace") as fh:
                out.append("== %s\n%s" % (f, fh.read()[-3000:]))
        return "\n".join(out)

    def run(self, argv, timeout_s=120, extra_env=None):
        return subprocess.run(argv, env=self.env(extra_env), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=timeout_s)

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs = []
        self._kill_strays()
        if self.dir:
            pidfile = os.path.join(self.dir, "munged.pid")
            if os.path.exists(pidfile):
                try:
                    pid = int(open(pidfile).read().strip())
                    os.kill(pid, signal.SIGTERM)
                    # munged writes its seed file as it exits: removing the directory before
                    # that left it behind with munged.seed in it.
                    deadline = time.monotonic() + 10
                    while time.monotonic() < deadline:
                        os.kill(pid, 0)
                        time.sleep(0.05)
                    os.kill(pid, signal.SIGKILL)
                except (ValueError, ProcessLookupError):
                    pass
        for ns in self.netns:
            _sh(["ip", "netns", "del", ns], check=False)
        for link in reversed(self.links):
            _sh(["ip", "link", "del", link], check=False)
        self.netns, self.links = [], []
        if self.dir and not os.environ.get("FABKIT_KEEP_SLURM_DIR"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def _kill_strays(self):
        """slurmstepd (and a step's tasks) run in sessions of their own, so killing the daemons'
        process groups can leave one behind (one stayed for an hour after a fabtrain step).
        Whatever carries this cluster's SLURM_CONF in its environment is this cluster's."""
        if not self.dir:
            return
        mark = ("SLURM_CONF=" + os.path.join(self.dir, "slurm.conf")).encode()
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                with open("/proc/%s/environ" % pid, "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            if mark in env:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
