#!/usr/bin/env python3
"""fabtrain --pp: every pipeline schedule side by side in one run on this machine, against the
1-process run of the same global batch (M micro-batches of B sequences) and against theory.

Contenders (alternating per round: the machine is noisy): the 1-process run (--grad-accum M), and
on P ranks (processes over Gloo, default 4) GPipe, 1F1B, interleaved 1F1B (--virtual-stages V,
default 2) and ZB-H1. Per contender: median tokens/s and step time over the steady steps; from the
metrics, the bubble theory gives with equal costs (bubble_fraction) and the bubble MEASURED (each
rank's share of the pipeline part of the step in which it computed nothing,
pp_stage_idle_fraction), the bytes sent between stages, and each rank's peak activations held
(micro-batch chunks, and heap bytes above the step's start).

Loss guard: every pipelined run must compute what the 1-process run computes (same weights, same
batches in the same order, fp32); its per-step losses must agree within 1e-4 relative, the
tolerance of the pipeline's tests, or the bench fails.

  .venv/bin/python3 bench/trainer/pipeline_bench.py --fabtrain BUILD/trainer/app/fabtrain [--stages 4]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_bench import make_inputs  # noqa: E402  (the same model and data maker)

LOSS_REL_TOL = 1e-4


def run(a, d, tag, extra):
    out = os.path.join(d, tag)
    cmd = [a.fabtrain, "--model", os.path.join(d, "model"), "--data", os.path.join(d, "train.jsonl"), "--output", out,
           "--max-length", str(a.max_length), "--micro-batch-size", str(a.micro_batch), "--max-steps", str(a.steps),
           "--lr", "1e-4", "--no-resume", "--device", "cpu", "--threads", "1", "--log-every", "1"] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("fabtrain failed: " + " ".join(cmd) + "\n" + r.stderr[-3000:])
    rows = [json.loads(l) for l in open(os.path.join(out, "metrics.jsonl")) if l.strip() and '"loss"' in l]
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fabtrain", required=True)
    p.add_argument("--stages", type=int, default=4)
    p.add_argument("--virtual-stages", type=int, default=2)
    p.add_argument("--micro-batches", type=int, default=8)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--micro-batch", type=int, default=2)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--vocab", type=int, default=4096)
    a = p.parse_args()
    s, m, v = a.stages, a.micro_batches, a.virtual_stages
    if a.layers < s * v:
        sys.exit("--layers %d cannot fill %d x %d virtual stages" % (a.layers, s, v))
    contenders = {"1 process": ["--grad-accum", str(m)]}
    for sched in ("gpipe", "1f1b", "interleaved-1f1b", "zb-h1"):
        extra = ["--nproc", str(s), "--pp", str(s), "--schedule", sched, "--micro-batches", str(m)]
        if sched == "interleaved-1f1b":
            extra += ["--virtual-stages", str(v)]
        contenders[sched] = extra
    tps, step_ms, idle = ({k: [] for k in contenders} for _ in range(3))
    last = {}
    with tempfile.TemporaryDirectory() as d:
        make_inputs(d, a)
        for _ in range(a.rounds):
            for name, extra in contenders.items():
                rows = run(a, d, name.replace(" ", "-"), extra)
                steady = rows[a.warmup:] or rows
                tps[name].append(statistics.median(x["tokens_per_s"] for x in steady))
                step_ms[name].append(statistics.median(x["step_time_ms"] for x in steady))
                if "pp_stage_idle_fraction" in rows[-1]:
                    # Per rank: its idle share, averaged over the steady steps of this round.
                    idle[name].append([statistics.mean(x["pp_stage_idle_fraction"][r] for x in steady)
                                       for r in range(s)])
                last[name] = rows
        ref = [x["loss"] for x in last["1 process"]]
        for name, rows in last.items():
            got = [x["loss"] for x in rows]
            bad = [(i + 1, g, r) for i, (g, r) in enumerate(zip(got, ref)) if abs(g - r) > LOSS_REL_TOL * abs(r)]
            if len(got) != len(ref) or bad:
                sys.exit("loss guard failed: %s's losses differ from the 1-process run's: %s" % (name, bad or got))
    print("model: hidden %d, %d layers, vocab %d; global batch %d micro-batches x %d x %d tokens; %d ranks "
          "(1 thread each), interleaved with %d chunks per rank; %d rounds, medians; loss guard passed (every "
          "schedule's losses within %g of the 1-process run's)" %
          (a.hidden, a.layers, a.vocab, m, a.micro_batch, a.max_length, s, v, a.rounds, LOSS_REL_TOL))
    print("| | tokens/s | step ms | bubble theory | bubble measured: mean (per rank) | sent/step | "
          "peak micro-batch chunks per rank | peak activation MB per rank |")
    print("|---|---|---|---|---|---|---|---|")
    for name in contenders:
        r = last[name][-1]
        row = "| %s | %.0f | %.0f |" % (name, statistics.median(tps[name]), statistics.median(step_ms[name]))
        if "pp_bytes_sent" in r:
            per_rank = [statistics.median(rnd[k] for rnd in idle[name]) for k in range(s)]
            row += " %.3f | %.3f (%s) | %d B | %s | %s |" % (
                r["bubble_fraction"], statistics.mean(per_rank), ", ".join("%.2f" % x for x in per_rank),
                r["pp_bytes_sent"],
                ", ".join(str(x) for x in r["pp_stage_peak_micro_batches"]),
                ", ".join("%.1f" % (x / 1e6) for x in r["pp_stage_activation_bytes_peak"]))
        else:
            row += " | | | | |"
        print(row)


if __name__ == "__main__":
    main()
