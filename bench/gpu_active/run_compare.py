#!/usr/bin/env python3
"""fabcheck's active GPU check (fabcheck-gpu-bench, the child `fabcheck node --active` runs) side by
side with a reference on the same GPUs and sizes: torch's own CUDA path (torch_reference.py: bf16
matmul, Tensor.copy_ device-to-device and pinned host<->device, alone and all at once). Rounds
alternate fabcheck and torch; per GPU and figure it prints both medians and the median of the
per-round ratios fabcheck/torch (goal: within a few percent: the same cuBLAS and copy engines).
Optionally (--fabcheck) it then times one whole `fabcheck node --active --json` and prints what it
reported (status, elapsed, all-reduce busbw, the gpu_active findings).

usage: run_compare.py BENCH [--python PY] [--rounds 3] [--gemm-n 8192] [--fabcheck FABCHECK]
Exit: 0 compared, 1 a run failed, 2 cannot run on this machine (the reason is printed)."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIGURES = ["gemm_bf16", "device_copy", "h2d", "d2h", "h2d_concurrent", "d2h_concurrent"]
UNITS = {"gemm_bf16": "TFLOPS"}


def cannot_run(why):
    print(f"bench/gpu_active: cannot run on this machine: {why}")
    sys.exit(2)


def visible_gpus():
    if shutil.which("nvidia-smi") is None:
        cannot_run("nvidia-smi is not installed (no NVIDIA driver): this comparison needs a GPU")
    p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    n = sum(1 for line in p.stdout.splitlines() if line.startswith("GPU "))
    if p.returncode != 0 or n == 0:
        cannot_run(f"nvidia-smi -L lists no GPU (exit {p.returncode}: {(p.stdout + p.stderr).strip()[:200]})")
    return n


def bench_args(a):
    return ["--gemm-n", str(a.gemm_n), "--gemm-warmup", str(a.gemm_warmup), "--gemm-iters", str(a.gemm_iters),
            "--device-copy-bytes", str(a.device_copy_bytes), "--device-copy-iters", str(a.device_copy_iters),
            "--host-copy-bytes", str(a.host_copy_bytes), "--host-copy-iters", str(a.host_copy_iters)]


def run_fabcheck_bench(bench, a):
    """fabcheck-gpu-bench over its protocol (fd 3): {gpu index: {figure: value}}, names, errors."""
    r, w = os.pipe()
    cmd = ["sh", "-c", f'exec "$@" 3>&{w}', "sh", bench] + bench_args(a) + ["--sysfs", "/sys"]
    p = subprocess.Popen(cmd, pass_fds=(w,), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    os.close(w)
    figures, names, errors = {}, {}, []
    with os.fdopen(r) as ctl:
        for line in ctl:
            head, _, rest = line.rstrip("\n").partition(" ")
            if head == "HELLO":
                for d in json.loads(rest)["devices"]:
                    names[d["index"]] = d["name"]
                    figures[d["index"]] = {}
            elif head == "FIGURE":
                f = json.loads(rest)
                if "value" in f:
                    figures[f["gpu"]][f["step"]] = f["value"]
                else:
                    errors.append(f"GPU {f['gpu']} {f['step']}: {f.get('error')}")
            elif head in ("UNAVAILABLE", "FAILED"):
                errors.append(line.strip())
    log, _ = p.communicate(timeout=600)
    if p.returncode != 0:
        errors.append(f"fabcheck-gpu-bench exit {p.returncode}: {log[-500:]}")
    return figures, names, errors


def run_torch(python, a):
    cmd = [python, os.path.join(HERE, "torch_reference.py")] + bench_args(a)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        return None, f"torch_reference exit {p.returncode}: {p.stderr.strip()[-500:]}"
    doc = json.loads(p.stdout)
    return {g["index"]: g["figures"] for g in doc["gpus"]}, doc.get("torch")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench", help="build/cli/fabcheck-gpu-bench")
    ap.add_argument("--python", default=os.path.join(HERE, "..", "..", ".venv", "bin", "python3"),
                    help="python with torch (default: the project's .venv)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gemm-n", type=int, default=8192)
    ap.add_argument("--gemm-warmup", type=int, default=10)
    ap.add_argument("--gemm-iters", type=int, default=50)
    ap.add_argument("--device-copy-bytes", type=int, default=512 << 20)
    ap.add_argument("--device-copy-iters", type=int, default=50)
    ap.add_argument("--host-copy-bytes", type=int, default=256 << 20)
    ap.add_argument("--host-copy-iters", type=int, default=10)
    ap.add_argument("--fabcheck", help="also time one `fabcheck node --active --json` with this binary")
    a = ap.parse_args()
    if not os.access(a.bench, os.X_OK):
        cannot_run(f"{a.bench}: not an executable fabcheck-gpu-bench (built only where CUDA and cuBLAS were found)")
    gpus = visible_gpus()
    if not os.access(a.python, os.X_OK):
        cannot_run(f"{a.python}: no python with torch (give --python)")
    ours, theirs, failed = {}, {}, []
    torch_version, names = None, {}
    for rnd in range(a.rounds):
        for who in ("fabcheck", "torch") if rnd % 2 == 0 else ("torch", "fabcheck"):
            t0 = time.monotonic()
            if who == "fabcheck":
                figs, names, errors = run_fabcheck_bench(a.bench, a)
                failed += errors
                target = ours
            else:
                figs, torch_version = run_torch(a.python, a)
                if figs is None:
                    failed.append(torch_version)
                    continue
                target = theirs
            for gpu, f in figs.items():
                for name, v in f.items():
                    target.setdefault((gpu, name), []).append(v)
            print(f"round {rnd + 1}: {who} {time.monotonic() - t0:.1f} s", file=sys.stderr)
    print(f"fabcheck-gpu-bench vs torch {torch_version} on {gpus} GPU(s), {a.rounds} rounds alternated; medians")
    print(f"{'gpu':>3} {'figure':<15} {'fabcheck':>10} {'torch':>10} {'unit':<7} {'ratio':>6}")
    for gpu in sorted({g for g, _ in ours} | {g for g, _ in theirs}):
        for name in FIGURES:
            o, t = ours.get((gpu, name), []), theirs.get((gpu, name), [])
            if not o and not t:
                continue
            ratios = [x / y for x, y in zip(o, t) if y > 0]
            fmt = lambda v: f"{statistics.median(v):10.1f}" if v else f"{'-':>10}"
            ratio = f"{statistics.median(ratios):6.3f}" if ratios else f"{'-':>6}"
            print(f"{gpu:>3} {name:<15} {fmt(o)} {fmt(t)} {UNITS.get(name, 'GB/s'):<7} {ratio}")
    if names:
        print("GPUs: " + ", ".join(f"{i} {n}" for i, n in sorted(names.items())))
    if a.fabcheck:
        t0 = time.monotonic()
        p = subprocess.run([a.fabcheck, "node", "--active", "--json", "--no-progress"], capture_output=True, text=True,
                           timeout=900)
        wall = time.monotonic() - t0
        try:
            doc = json.loads(p.stdout)
            s = doc.get("gpu_active", {})
            print(f"fabcheck node --active: exit {p.returncode}, wall {wall:.1f} s, status {s.get('status')}, "
                  f"gpu_active.elapsed_ms {s.get('elapsed_ms', 0):.0f}")
            for r in s.get("allreduce", []):
                print(f"  all-reduce {r['algorithm']}: {r['status']} busbw {r.get('busbw_gb_per_s')} GB/s "
                      f"(expected {r.get('expected')}, {r.get('reason') or r.get('basis')})")
            for f in doc.get("findings", []):
                if f["code"].startswith("gpu_active."):
                    print(f"  {f['severity']} {f['code']} {f['subject']}: {f['message']}")
        except ValueError:
            failed.append(f"fabcheck node --active printed no JSON (exit {p.returncode}): {p.stderr[-300:]}")
    for e in failed:
        print("FAILED:", e)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
