#!/usr/bin/python3
"""What `fabcheck cluster`'s controller costs while it holds thousands of real agents: its peak
RSS, descriptors, threads and launcher children (read from /proc every 0.2 s) vs the number of
hosts N and the pair runs at once (--max-parallel), plus the agents' own RSS.

    sudo bench/cluster/controller_scale.py build-dev/cli/fabcheck --hosts 256 1024 4096 --parallel 256

Hosts: N host names (c0 ... cN-1) over K network namespaces of tests/integration/netns/netns.py's
NetnsWorld (one bridge, one address each, 198.18.1.0/24, deleted after): a launcher script of
this run's private directory (--launcher 'DIR/launch {host}') starts host cI's `fabcheck agent`
or `fabcheck node` with `ip netns exec` in namespace I mod K. Every agent is a real process the
controller launched, said hello to, connected to and drove through its pair run; two agents in
one namespace listen on different ports. K is 2 x the pair runs at once, at most 98 (NetnsWorld names
its controller's bridge port p99), so at 256 pairs at once about five agents share a namespace. What
this does not measure is the network: pairs in one namespace talk over its veth, and 2 cores
carry every agent's probe and transfer, hence the short pair settings (--pings 5,
--bandwidth-ms 20, no re-test, no search) and generous timeouts.

The controller runs `--pairs ring` (every host in 2 rounds of N/2 pairs) with node checks; the
run stops early when MemAvailable falls below --min-free-gib or at --timeout-s (the line says
so: the peaks of threads, descriptors and children are a wave's, reached in the first one).
--replay-node-checks answers every node check with one real `fabcheck node --json` report
captured at the start (the launcher script cats it): the controller still starts a launcher per
node, reads, parses and keeps the report; what is skipped is the probe's CPU on 2 cores (about
0.1 s CPU and 0.4 s each here). The agents' own probes (their `facts` answer) are never skipped. Prints one line
per (N, parallel) and, with --json FILE, the samples' peaks as JSON.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration", "netns"))
import netns  # noqa: E402

# NetnsWorld: host i is bridge port p<i> and 198.18.1.(10 + i); its controller is port p99.
MAX_NAMESPACES = 98
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def status_fields(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "VmSize", "Threads"):
                out[k] = int(v.split()[0])
    return out


def children(pid):
    kids = []
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def rss_kib(pid):
    try:
        with open("/proc/%d/statm" % pid) as f:
            return int(f.read().split()[1]) * PAGE_KIB
    except OSError:
        return 0


def mem_available_gib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1048576.0
    return 0.0


class Sampler(threading.Thread):
    def __init__(self, pid, min_free_gib):
        super().__init__(daemon=True)
        self.pid = pid
        self.min_free_gib = min_free_gib
        self.stop = threading.Event()
        self.peak = {"rss_kib": 0, "hwm_kib": 0, "vmsize_kib": 0, "threads": 0, "fds": 0,
                     "children": 0, "agents_rss_kib": 0, "agent_rss_kib_max": 0}
        self.min_free = 1e9
        self.aborted = None
        self.samples = []

    def run(self):
        t0 = time.monotonic()
        k = 0
        while not self.stop.is_set():
            try:
                s = status_fields(self.pid)
                fds = len(os.listdir("/proc/%d/fd" % self.pid))
            except OSError:
                return
            kids = children(self.pid)
            p = self.peak
            p["rss_kib"] = max(p["rss_kib"], s.get("VmRSS", 0))
            p["hwm_kib"] = max(p["hwm_kib"], s.get("VmHWM", 0))
            p["vmsize_kib"] = max(p["vmsize_kib"], s.get("VmSize", 0))
            p["threads"] = max(p["threads"], s.get("Threads", 0))
            p["fds"] = max(p["fds"], fds)
            p["children"] = max(p["children"], len(kids))
            if k % 10 == 0:  # the agents' RSS every 2 s: one read per agent
                rs = [rss_kib(c) for c in kids]
                p["agents_rss_kib"] = max(p["agents_rss_kib"], sum(rs))
                if rs:
                    p["agent_rss_kib_max"] = max(p["agent_rss_kib_max"], max(rs))
                free = mem_available_gib()
                self.min_free = min(self.min_free, free)
                self.samples.append({"t_s": round(time.monotonic() - t0, 1), "rss_kib": s.get("VmRSS", 0),
                                     "threads": s.get("Threads", 0), "fds": fds, "children": len(kids),
                                     "agents_rss_kib": sum(rs), "mem_available_gib": round(free, 2)})
                if free < self.min_free_gib:
                    self.aborted = "MemAvailable %.1f GiB < %.1f GiB" % (free, self.min_free_gib)
                    os.kill(self.pid, signal.SIGTERM)  # the controller stops its agents' groups
                    return
            k += 1
            self.stop.wait(0.2)


LAUNCH = """#!/bin/sh
# c<I> -> namespace I mod {k}: `ip netns exec` starts the command given after the host there.
i=${{1#c}}
shift
{replay}exec ip netns exec {prefix}-h$((i % {k})) "$@"
"""
# --replay-node-checks: `fabcheck node --json` answered with the report a real one printed in
# namespace 0 at the start (the controller spawns, reads, parses and keeps it as for a live one).
REPLAY = """if [ "$2" = node ]; then exec cat {report}; fi
"""


def one(fabcheck, n, parallel, extra, min_free_gib, timeout_s, replay_node_checks):
    k = min(MAX_NAMESPACES, max(2, 2 * parallel), n)
    with netns.NetnsWorld(hosts=k, decoys=False, controller=True) as w, \
            tempfile.TemporaryDirectory(prefix="fk-ctlscale-") as d:
        launch = os.path.join(d, "launch")
        replay = ""
        if replay_node_checks:
            report = os.path.join(d, "node.json")
            with open(report, "w") as f:
                r = subprocess.run(["ip", "netns", "exec", w.hosts[0], fabcheck, "node", "--json"],
                                   stdout=f, stderr=subprocess.PIPE, text=True, timeout=300)
            if r.returncode not in (0, 1):
                raise RuntimeError("fabcheck node --json: exit %d: %s" % (r.returncode, r.stderr[-300:]))
            replay = REPLAY.format(report=report)
        with open(launch, "w") as f:
            f.write(LAUNCH.format(k=k, prefix=w.tag, replay=replay))
        os.chmod(launch, 0o700)
        hosts = ["c%d" % i for i in range(n)]
        out = os.path.join(d, "cluster.json")
        argv = ["ip", "netns", "exec", w.ctl, fabcheck, "cluster", *hosts, "--launcher", launch + " {host}",
                "--pairs", "ring", "--max-parallel", str(parallel), "--pings", "5", "--bandwidth-ms", "20",
                "--streams", "1", "--no-retest", "--no-search", "--timeout-ms", "60000",
                "--node-timeout-ms", "300000", "--no-progress", "--json-out", out, *extra]
        load0 = os.getloadavg()
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # `ip netns exec` execs fabcheck in place: the same pid.
        sampler = Sampler(p.pid, min_free_gib)
        sampler.start()
        try:
            _, err = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGTERM)
            _, err = p.communicate()
            sampler.aborted = sampler.aborted or "ran past %d s" % timeout_s
        wall = time.monotonic() - t0
        sampler.stop.set()
        sampler.join()
        res = {"n": n, "parallel": parallel, "namespaces": k, "replay_node_checks": replay_node_checks, "wall_s": round(wall, 1), "exit": p.returncode,
               "load_before": [round(x, 2) for x in load0], "load_after": [round(x, 2) for x in os.getloadavg()],
               "min_mem_available_gib": round(sampler.min_free, 2), "aborted": sampler.aborted, **sampler.peak}
        try:
            with open(out) as f:
                doc = json.load(f)
            c = next(s["data"] for s in doc.get("sections", []) if s.get("name") == "cluster") \
                if "sections" in doc else doc.get("cluster", {})
            pairs = c.get("matrix", {}).get("pairs", [])
            res["pair_runs"] = len(pairs)
            res["pairs_ok"] = sum(1 for x in pairs if x.get("ok"))
            res["nodes_ok"] = sum(1 for x in c.get("nodes", []) if x.get("check") == "ok")
            res["nodes_ms"] = c.get("schedule", {}).get("nodes_ms")
            res["pairs_ms"] = c.get("schedule", {}).get("pairs_ms")
            errs = [x.get("error") for x in pairs if not x.get("ok")]
            res["first_pair_error"] = (errs[0] or "")[:300] if errs else None
        except (OSError, ValueError, StopIteration) as e:
            res["report"] = "no report: %s; stderr: %s" % (e, err[-300:])
        res["samples"] = sampler.samples
        return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="after --: more fabcheck cluster flags")
    ap.add_argument("fabcheck")
    ap.add_argument("--hosts", type=int, nargs="+", default=[256, 1024, 4096])
    ap.add_argument("--parallel", type=int, nargs="+", default=[256])
    ap.add_argument("--min-free-gib", type=float, default=6.0)
    ap.add_argument("--timeout-s", type=int, default=3600)
    ap.add_argument("--json", help="write every result (with its samples) here")
    ap.add_argument("--replay-node-checks", action="store_true",
                    help="answer each node check with one real report captured at the start (the "
                         "controller's side is unchanged; 2 cores cannot probe 4096 nodes quickly)")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    extra = argv[cut + 1:]
    ok, why = netns.have_root_and_netns()
    if not ok:
        print("skipped: " + why)
        return 77
    fabcheck = os.path.abspath(a.fabcheck)
    results = []
    print("N  parallel  wall_s  load  ctl_peak_rss_MiB  ctl_fds  ctl_threads  children  "
          "agents_rss_MiB(max one)  pairs_ok/runs  nodes_ok  note", flush=True)
    for n in a.hosts:
        for par in a.parallel:
            r = one(fabcheck, n, par, extra, a.min_free_gib, a.timeout_s, a.replay_node_checks)
            results.append(r)
            print("%d  %d  %.0f  %.1f->%.1f  %.1f  %d  %d  %d  %.0f(%.1f)  %s/%s  %s  %s" % (
                n, par, r["wall_s"], r["load_before"][0], r["load_after"][0], r["hwm_kib"] / 1024.0,
                r["fds"], r["threads"], r["children"], r["agents_rss_kib"] / 1024.0,
                r["agent_rss_kib_max"] / 1024.0, r.get("pairs_ok"), r.get("pair_runs"), r.get("nodes_ok"),
                r["aborted"] or r.get("report") or r.get("first_pair_error") or ""), flush=True)
            if a.json:
                with open(a.json + ".tmp", "w") as f:
                    json.dump(results, f, indent=1)
                os.replace(a.json + ".tmp", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
