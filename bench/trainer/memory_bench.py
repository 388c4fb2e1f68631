#!/usr/bin/env python3
"""Peak memory saved vs tokens/s lost by fabtrain's memory options, side by side in one run.

Pairs, each the same job with and without the option:
  --fused-step            (the optimizer runs in the backward unit by unit; no gradient shards kept)
                          vs the usual step, both with --max-grad-norm 0 (the fused step cannot clip);
  --offload-activations   (recompute's per-layer checkpoints wait in host memory) vs --recompute alone.
Peak memory is the GPU allocator's peak (metrics.jsonl gpu_peak_bytes) on --device cuda, else the
process's peak RSS (max_rss_bytes). tokens/s is the median over the steps after --warmup. Rounds
alternate which side runs first; each line prints both sides and their ratios.

On CPU only the fused step means anything: offloading copies the checkpoints within host memory
there (fabtrain says so), so `--device cpu` skips that pair.

  .venv/bin/python3 bench/trainer/memory_bench.py --fabtrain build/trainer/app/fabtrain --device cpu
"""
import argparse, json, os, random, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_model import SIZES, write_inputs  # noqa: E402


def run(a, d, tag, extra):
    out = os.path.join(d, tag)
    cmd = [a.fabtrain, "--model", os.path.join(d, "model"), "--data", os.path.join(d, "train.jsonl"),
           "--format", "input_ids", "--output", out, "--max-length", str(a.seq), "--micro-batch-size",
           str(a.batch), "--max-steps", str(a.steps), "--lr", "1e-4", "--no-resume", "--no-control",
           "--device", a.device, "--max-grad-norm", "0"] + extra
    if a.device == "cuda":
        cmd += ["--torch-dtype", "bfloat16"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("fabtrain failed: " + " ".join(cmd) + "\n" + r.stderr[-3000:])
    rows = [json.loads(l) for l in open(os.path.join(out, "metrics.jsonl")) if l.strip()]
    rows = [x for x in rows if "step_time_ms" in x]
    key = "gpu_peak_bytes" if a.device == "cuda" else "max_rss_bytes"
    med = statistics.median(x["step_time_ms"] for x in rows[a.warmup:]) / 1000
    return {"tokens_per_s": a.batch * a.seq / med, "peak": max(x[key] for x in rows)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fabtrain", required=True)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--seq", type=int, default=None)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    gpu = a.device == "cuda"
    a.batch = a.batch or (8 if gpu else 2)
    a.seq = a.seq or (2048 if gpu else 128)
    d = tempfile.mkdtemp(prefix="fabtrain-memory-bench-")
    write_inputs(d, "350m" if gpu else "33m", records=max(64, 2 * a.batch * a.steps), length=a.seq)
    pairs = [("fused-step", [], ["--fused-step"])]
    if gpu:
        pairs.append(("offload-activations", ["--recompute"], ["--recompute", "--offload-activations"]))
    unit = "GPU peak" if gpu else "peak RSS"
    for name, base, option in pairs:
        mem, speed = [], []
        for r in range(a.rounds):
            order = [("base", base), ("option", option)]
            if r % 2:
                order.reverse()
            res = {side: run(a, d, f"{name}-{side}-{r}", extra) for side, extra in order}
            saved = res["base"]["peak"] - res["option"]["peak"]
            ratio = res["option"]["tokens_per_s"] / res["base"]["tokens_per_s"]
            mem.append(saved)
            speed.append(ratio)
            print(f"{name} round {r + 1}: {unit} {res['base']['peak'] / 2**20:.1f} -> {res['option']['peak'] / 2**20:.1f} "
                  f"MiB (saved {saved / 2**20:.1f} MiB); tokens/s {res['base']['tokens_per_s']:.0f} -> "
                  f"{res['option']['tokens_per_s']:.0f} ({ratio:.3f}x)", flush=True)
        print(f"{name}: median saved {statistics.median(mem) / 2**20:.1f} MiB of {unit}, "
              f"median tokens/s ratio {statistics.median(speed):.3f}")


if __name__ == "__main__":
    main()
