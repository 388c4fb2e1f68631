#!/usr/bin/env python3
"""Median wall time of `fabcheck node --json` over N runs, next to reference tools measured in the
same loop (alternated, because machines are noisy): `/bin/true` (process start cost), `ip -j addr`
(the interface facts), `nvidia-smi -L` (the GPU inventory through NVML, as fabcheck's GPU probe
reads it) and `ibv_devinfo` (the RDMA devices). A reference tool that is absent is skipped and the
reason printed. Ratios are medians of per-round ratios. fabcheck's own GPU-probe time
(gpus.query_ms) is reported beside, to separate NVML from the rest.
Target: <= 100 ms per node check, also on a GPU node.
Without a GPU, `--nvml-replay FILE` (extra arguments go to fabcheck node) runs the whole check with
a recorded 8-GPU node's NVML answers, e.g. tests/fixtures/nvml/h100_sxm_8gpu_healthy.json: every
probe and judge runs, only the NVML calls themselves are the fake's.
Where FABKIT_BENCH_JSON names a file, the figures are also written there as JSON.
usage: node_bench.py FABCHECK [N [FABCHECK NODE ARGS...]]"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

FABCHECK = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 30
TARGET_MS = 100.0
FAB = "fabcheck node --json"

EXTRA = sys.argv[3:]
if EXTRA:
    FAB = "fabcheck node --json " + " ".join(EXTRA)
contenders = {FAB: [FABCHECK, "node", "--json"] + EXTRA, "/bin/true": ["/bin/true"]}
skipped = {}
for name, argv in (("ip -j addr", ["ip", "-j", "addr"]), ("nvidia-smi -L", ["nvidia-smi", "-L"]),
                   ("ibv_devinfo", ["ibv_devinfo"])):
    if shutil.which(argv[0]) is None:
        skipped[name] = f"{argv[0]} is not installed"
        continue
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        # nvidia-smi without a driver, ibv_devinfo without devices: not a measurement of the work.
        why = (p.stdout + p.stderr).strip().splitlines()
        skipped[name] = f"exit {p.returncode}: {why[0] if why else 'no output'}"
        continue
    contenders[name] = argv

times = {k: [] for k in contenders}
gpu_query_ms = []
for _ in range(N):
    for name, cmd in contenders.items():
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        times[name].append((time.perf_counter() - t0) * 1000)
        if p.returncode not in (0, 1):
            sys.exit(f"{name}: exit {p.returncode}")
        if name == FAB:
            gpu_query_ms.append(json.loads(p.stdout)["gpus"]["query_ms"])

med = {k: statistics.median(v) for k, v in times.items()}
print(f"runs: {N} (alternated)")
print(f"  {'command':<22} {'median ms':>10} {'min ms':>9} {'fabcheck / it':>14}")
for k, v in med.items():
    ratio = "" if k == FAB else f"{statistics.median(a / b for a, b in zip(times[FAB], times[k])):.2f}x"
    print(f"  {k:<22} {v:10.2f} {min(times[k]):9.2f} {ratio:>14}")
for k, why in skipped.items():
    print(f"  {k:<22} skipped: {why}")
print(f"  fabcheck GPU probe (NVML, gpus.query_ms): median {statistics.median(gpu_query_ms):.2f} ms")
fab = med[FAB]
print(f"  target <= {TARGET_MS:.0f} ms: {'met' if fab <= TARGET_MS else 'NOT met'} ({fab:.1f} ms)")
if os.environ.get("FABKIT_BENCH_JSON"):
    with open(os.environ["FABKIT_BENCH_JSON"], "w") as f:
        json.dump({"runs": N, "median_ms": {k: round(v, 2) for k, v in med.items()},
                   "fabcheck_over": {k: round(statistics.median(a / b for a, b in zip(times[FAB], times[k])), 3)
                                     for k in med if k != FAB},
                   "skipped": skipped, "gpu_query_ms_median": round(statistics.median(gpu_query_ms), 3),
                   "target_ms": TARGET_MS, "target_met": fab <= TARGET_MS}, f, indent=1)
