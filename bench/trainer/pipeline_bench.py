#!/usr/bin/env python3
"""fabtrain --pp: GPipe vs 1F1B vs the 1-process run on the same global batch (M micro-batches of
B sequences). Per contender: median tokens/s over the steady steps, and from the pipelined runs'
metrics the bytes sent between stages per step, the bubble ((S-1)/(M+S-1)), each stage's time
blocked in receives / step time, and each stage's peak activations held (micro-batches, and heap
bytes above the step's start). Contenders alternate per round (the machine is noisy).

  .venv/bin/python3 bench/trainer/pipeline_bench.py --fabtrain BUILD/trainer/app/fabtrain [--stages 2]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_bench import make_inputs  # noqa: E402  (the same model and data maker)


def run(a, d, tag, extra):
    out = os.path.join(d, tag)
    cmd = [a.fabtrain, "--model", os.path.join(d, "model"), "--data", os.path.join(d, "train.jsonl"), "--output", out,
           "--max-length", str(a.max_length), "--micro-batch-size", str(a.micro_batch), "--max-steps", str(a.steps),
           "--lr", "1e-4", "--no-resume", "--device", "cpu"] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("fabtrain failed: " + " ".join(cmd) + "\n" + r.stderr[-3000:])
    rows = [json.loads(l) for l in open(os.path.join(out, "metrics.jsonl")) if l.strip() and '"loss"' in l]
    return rows[a.warmup:] or rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fabtrain", required=True)
    p.add_argument("--stages", type=int, default=2)
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
    s, m = a.stages, a.micro_batches
    contenders = {"1 process": ["--grad-accum", str(m)]}
    for sched in ("gpipe", "1f1b"):
        contenders["pp%d %s" % (s, sched)] = ["--nproc", str(s), "--pp", str(s), "--schedule", sched,
                                             "--micro-batches", str(m)]
    tps = {k: [] for k in contenders}
    last = {}
    with tempfile.TemporaryDirectory() as d:
        make_inputs(d, a)
        for _ in range(a.rounds):
            for name, extra in contenders.items():
                rows = run(a, d, name.replace(" ", "-"), extra)
                tps[name].append(statistics.median(x["tokens_per_s"] for x in rows))
                last[name] = rows[-1]
    print("model: hidden %d, %d layers, vocab %d; global batch %d micro-batches x %d x %d tokens; %d rounds" %
          (a.hidden, a.layers, a.vocab, m, a.micro_batch, a.max_length, a.rounds))
    for name in contenders:
        line = "%-12s %8.0f tokens/s (median)" % (name, statistics.median(tps[name]))
        r = last[name]
        if "pp_bytes_sent" in r:
            line += ("; sent %d bytes/step; bubble %.3f; recv-wait/step %s; peak micro-batches %s; "
                     "peak activation bytes %s") % (r["pp_bytes_sent"], r["bubble_fraction"],
                                                    ["%.2f" % w for w in r["pp_stage_recv_wait_fraction"]],
                                                    r["pp_stage_peak_micro_batches"],
                                                    r["pp_stage_activation_bytes_peak"])
        print(line)


if __name__ == "__main__":
    main()
