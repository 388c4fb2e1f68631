#!/usr/bin/python3
"""How fast a real Slurm creates the job steps `fabcheck cluster --launcher srun` asks for: one
`srun -w HOST -N1 -n1 --quiet` per agent start and per node check (fabric/launch/launcher.cc).
Steps started one after another (the latency of one step) and one per node at once (what a round
asks of slurmctld), inside one allocation, on tests/integration/slurm/slurm_cluster.py's cluster
(munged + slurmctld + 4 slurmd in network namespaces on this machine).

    sudo bench/cluster/srun_steps.py --steps 40

Every step runs `true`: what is timed is Slurm's step creation, launch and teardown (credential,
slurmctld RPC, slurmd forking slurmstepd), not the agent. Exit 77 when Slurm is not installed.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration", "slurm"))
from slurm_cluster import SlurmCluster  # noqa: E402


def step(c, job, node):
    t0 = time.monotonic()
    r = c.run(["srun", "--jobid", job, "-w", node, "-N1", "-n1", "--quiet", "true"], timeout_s=120)
    return time.monotonic() - t0, r.returncode, r.stderr.strip()[-200:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=40, help="steps per measurement")
    ap.add_argument("--nodes", type=int, default=4)
    a = ap.parse_args()
    if os.geteuid() != 0 or not shutil.which("slurmctld") or not shutil.which("munged"):
        print("skipped: needs root, slurmctld and munged (slurm-wlm, munge)")
        return 77
    with SlurmCluster(nodes=a.nodes) as c:
        r = c.run(["salloc", "-N%d" % a.nodes, "--no-shell"], timeout_s=60)
        m = re.search(r"Granted job allocation (\d+)", r.stderr + r.stdout)
        if not m:
            print("salloc failed: " + (r.stderr + r.stdout)[-400:])
            return 1
        job = m.group(1)
        nodes = c.node_names
        load0 = os.getloadavg()
        # One after another: each srun waits for its step to end.
        seq = [step(c, job, nodes[i % len(nodes)]) for i in range(a.steps)]
        # One per node at once, in waves: a round's agent starts.
        conc = []
        t0 = time.monotonic()
        for _ in range(max(1, a.steps // len(nodes))):
            out = [None] * len(nodes)
            th = [threading.Thread(target=lambda i=i: out.__setitem__(i, step(c, job, nodes[i])))
                  for i in range(len(nodes))]
            for t in th:
                t.start()
            for t in th:
                t.join()
            conc += out
        conc_wall = time.monotonic() - t0
        load1 = os.getloadavg()
        # What one srun costs the host it runs on (the controller's): RSS and threads mid-step.
        p = subprocess.Popen(["srun", "--jobid", job, "-w", nodes[0], "-N1", "-n1", "--quiet", "sleep", "3"],
                             env=c.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        srun_cost = {}
        with open("/proc/%d/status" % p.pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "Threads"):
                    srun_cost[k] = v.strip()
        p.wait()
        c.run(["scancel", job])
        version = c.run(["srun", "--version"]).stdout.strip()
    bad = [x for x in seq + conc if x[1] != 0]
    ts = [x[0] for x in seq]
    print("%s, %d nodes on this machine (%d cores), load %.2f -> %.2f" % (
        version, len(nodes), os.cpu_count(), load0[0], load1[0]))
    print("one at a time: %d steps, median %.3f s, p90 %.3f s, max %.3f s: %.1f steps/s" % (
        len(ts), statistics.median(ts), sorted(ts)[int(0.9 * (len(ts) - 1))], max(ts), len(ts) / sum(ts)))
    tc = [x[0] for x in conc]
    print("%d at once (one per node): %d steps in %.2f s, median %.3f s, max %.3f s: %.1f steps/s" % (
        len(nodes), len(tc), conc_wall, statistics.median(tc), max(tc), len(tc) / conc_wall))
    print("one srun process mid-step: VmRSS %s, %s threads" % (srun_cost.get("VmRSS"), srun_cost.get("Threads")))
    if bad:
        print("%d steps failed; first: exit %d: %s" % (len(bad), bad[0][1], bad[0][2]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
