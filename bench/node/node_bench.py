#!/usr/bin/env python3
"""Median wall time of `fabcheck node --json` over N runs, next to references measured in the
same loop (alternated, because this machine is noisy): `/bin/true` (process start cost) and
`ip -j addr` (a tool that reads the same interface facts). Target: <= 100 ms per node check.
usage: node_bench.py FABCHECK [N]"""
import statistics
import subprocess
import sys
import time

FABCHECK = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 30
TARGET_MS = 100.0

contenders = {
    "fabcheck node --json": [FABCHECK, "node", "--json"],
    "ip -j addr": ["ip", "-j", "addr"],
    "/bin/true": ["/bin/true"],
}
times = {k: [] for k in contenders}
for _ in range(N):
    for name, cmd in contenders.items():
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times[name].append((time.perf_counter() - t0) * 1000)
        if p.returncode not in (0, 1):
            sys.exit(f"{name}: exit {p.returncode}")

med = {k: statistics.median(v) for k, v in times.items()}
ratio_ip = statistics.median(a / b for a, b in zip(times["fabcheck node --json"], times["ip -j addr"]))
print(f"runs: {N} (alternated)")
for k, v in med.items():
    print(f"  {k:<22} median {v:8.2f} ms   min {min(times[k]):8.2f} ms")
print(f"  fabcheck / ip -j addr: median ratio {ratio_ip:.1f}x")
fab = med["fabcheck node --json"]
print(f"  target <= {TARGET_MS:.0f} ms: {'met' if fab <= TARGET_MS else 'NOT met'} ({fab:.1f} ms)")
