#!/usr/bin/env python3
"""Where a training step's time goes, from the Chrome traces of `fabtrain --trace-steps N`
(OUTPUT/trace/rank-R-step-S.json, Kineto's format: what torch.profiler writes).

  trace_summary.py TRACE.json|TRACE_DIR [...] [--top 12] [--json]

With CUDA activities in the trace (a GPU run): the step's wall time (first host op to the last
device activity), the time the GPU was busy (the union of kernel, copy and set intervals over
all streams, so overlapping streams count once) and idle, and the kernels' time by kind
(matmul, attention, norm, optimizer, NCCL, elementwise, copy, other) and by name.
Without them (a CPU run): the top-level host ops' time by name (an op inside another op on the
same thread counts in its parent only).

Each file is one step; the figures are means over the files given. Kernel kinds come from their
names (cuBLAS, CUTLASS, flash / cuDNN attention, NCCL, torch's foreach / fused optimizer kernels):
a name no rule knows is "other", and the top list shows it by name.
"""
import argparse
import json
import os
import re
import sys

DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}

# First match wins: attention before matmul (flash kernels' names mention gemm-like tiles), the
# optimizer before elementwise (multi_tensor_apply kernels are elementwise over lists).
KINDS = [
    ("attention", re.compile(r"flash|fmha|attention|sdpa|attn", re.I)),
    ("nccl", re.compile(r"nccl", re.I)),
    ("optimizer", re.compile(r"multi_tensor_apply|fused_adam|adamw?_|FusedAdam|_foreach", re.I)),
    ("matmul", re.compile(r"gemm|cutlass|nvjet|xmma|cublas|s16816|s1688|wgmma|matmul", re.I)),
    ("norm", re.compile(r"rms_?norm|layer_?norm|norm_kernel", re.I)),
    # The loss's softmax (cunn_SoftMaxForward...): attention's own softmax is inside its kernel.
    ("loss", re.compile(r"cross_entropy|nll_loss|softmax", re.I)),
    ("elementwise", re.compile(r"elementwise|vectorized|reduce_kernel|unrolled|CatArrayBatched|index|"
                               r"embedding|fill|copy", re.I)),
]


def kind_of(event):
    if event.get("cat") in ("gpu_memcpy", "gpu_memset"):
        return "copy"
    name = event.get("name", "")
    for kind, rx in KINDS:
        if rx.search(name):
            return kind
    return "other"


def union_us(intervals):
    """Total length of the union of [start, end) intervals."""
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def top_level(ops):
    """The ops not nested inside another op of the same thread (ts/dur intervals)."""
    out = []
    by_thread = {}
    for e in ops:
        by_thread.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        end = None
        for e in evs:
            if end is None or e["ts"] >= end:
                out.append(e)
                end = e["ts"] + e["dur"]
    return out


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a readable Chrome trace ({e})")
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise ValueError(f"{path}: no traceEvents list (is it a Chrome trace from --trace-steps?)")
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X"
            and isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float))]


def summarize_step(events, top):
    device = [e for e in events if e.get("cat") in DEVICE_CATS]
    host = [e for e in events if e.get("cat") in ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver")]
    if not device and not host:
        raise ValueError("no host op and no device activity in the trace")
    spans = [(e["ts"], e["ts"] + e["dur"]) for e in device + host]
    wall = max(e for _, e in spans) - min(s for s, _ in spans)
    by_name = {}
    if device:
        busy = union_us([(e["ts"], e["ts"] + e["dur"]) for e in device])
        kinds = {}
        for e in device:
            k = kind_of(e)
            kinds[k] = kinds.get(k, 0.0) + e["dur"]
            n = by_name.setdefault(e["name"], {"us": 0.0, "count": 0, "kind": k})
            n["us"] += e["dur"]
            n["count"] += 1
        return {"mode": "gpu", "wall_us": wall, "busy_us": busy, "kinds": kinds, "by_name": by_name}
    ops = top_level([e for e in host if e.get("cat") in ("cpu_op", "user_annotation")])
    for e in ops:
        n = by_name.setdefault(e["name"], {"us": 0.0, "count": 0, "kind": "host"})
        n["us"] += e["dur"]
        n["count"] += 1
    return {"mode": "cpu", "wall_us": wall, "busy_us": union_us([(e["ts"], e["ts"] + e["dur"]) for e in ops]),
            "kinds": {}, "by_name": by_name}


def trace_files(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".json"))
        elif not os.path.exists(p):
            raise ValueError(f"{p}: no such file or folder: was fabtrain run with --trace-steps N?")
        else:
            files.append(p)
    if not files:
        raise ValueError(f"no trace (.json) in {', '.join(paths)}: was fabtrain run with --trace-steps N?")
    return files


def summarize(paths, top=12):
    """The mean step over the trace files: a dict with ms figures (the JSON of --json)."""
    files = trace_files(paths)
    steps = [summarize_step(load(f), top) for f in files]
    modes = {s["mode"] for s in steps}
    if len(modes) != 1:
        raise ValueError("the traces mix GPU and CPU runs: summarize one run's traces at a time")
    n = len(steps)
    mode = modes.pop()
    wall = sum(s["wall_us"] for s in steps) / n
    busy = sum(s["busy_us"] for s in steps) / n
    names = {}
    for s in steps:
        for name, x in s["by_name"].items():
            m = names.setdefault(name, {"us": 0.0, "count": 0, "kind": x["kind"]})
            m["us"] += x["us"] / n
            m["count"] += x["count"] / n
    kinds = {}
    for s in steps:
        for k, us in s["kinds"].items():
            kinds[k] = kinds.get(k, 0.0) + us / n
    ms = lambda us: round(us / 1000, 3)  # noqa: E731
    out = {"mode": mode, "steps": n, "files": files, "step_ms": ms(wall),
           "busy_ms": ms(busy), "idle_ms": ms(max(0.0, wall - busy)),
           "busy_share": round(busy / wall, 4) if wall > 0 else None,
           "kinds": [{"kind": k, "ms": ms(us), "share": round(us / wall, 4) if wall > 0 else None}
                     for k, us in sorted(kinds.items(), key=lambda kv: -kv[1])],
           "top": [{"name": name, "kind": x["kind"], "ms": ms(x["us"]), "count": round(x["count"], 1),
                    "share": round(x["us"] / wall, 4) if wall > 0 else None}
                   for name, x in sorted(names.items(), key=lambda kv: -kv[1]["us"])[:top]]}
    return out


def render(s):
    what = "GPU busy" if s["mode"] == "gpu" else "top-level host ops"
    lines = [f"trace: {s['steps']} step(s), {s['mode'].upper()} run: step {s['step_ms']:.2f} ms, {what} "
             f"{s['busy_ms']:.2f} ms ({(s['busy_share'] or 0):.1%}), idle {s['idle_ms']:.2f} ms"]
    for k in s["kinds"]:
        lines.append(f"  {k['kind']:<12} {k['ms']:10.2f} ms  {(k['share'] or 0):6.1%}")
    lines.append("  top by time:")
    for t in s["top"]:
        name = t["name"] if len(t["name"]) <= 90 else t["name"][:87] + "..."
        lines.append(f"  {t['ms']:10.2f} ms {(t['share'] or 0):6.1%} x{t['count']:<6g} [{t['kind']}] {name}")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("traces", nargs="+", help="trace files or OUTPUT/trace folders")
    p.add_argument("--top", type=int, default=12)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    try:
        s = summarize(a.traces, a.top)
    except ValueError as e:
        print(f"trace_summary: {e}", file=sys.stderr)
        return 2
    print(json.dumps(s, indent=1) if a.json else render(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
