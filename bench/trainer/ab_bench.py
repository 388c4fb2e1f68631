#!/usr/bin/env python3
"""Two fabtrain builds (before / after a change) on run_bench.py's inputs and invocation, at 1 rank:
the two alternate (who goes first swaps every round), and the figure is the median over rounds of
after/before tokens/s, since this machine's load moves both by more than most changes do.

  .venv/bin/python3 bench/trainer/ab_bench.py --before OLD/fabtrain --after NEW/fabtrain
      [--rounds 6] [--hidden 256] [--layers 4] [--steps 10] [--max-length 128] [--micro-batch 4]
"""
import argparse, os, statistics, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_bench  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--before", required=True)
    p.add_argument("--after", required=True)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--micro-batch", type=int, default=4)
    p.add_argument("--threads", type=int, default=1)
    x = p.parse_args()
    for b in (x.before, x.after):
        if not os.access(b, os.X_OK):
            sys.exit(f"ab_bench: {b} is not an executable fabtrain (build it, or pass the right path)")
    a = argparse.Namespace(hidden=x.hidden, layers=x.layers, vocab=4096, max_length=x.max_length,
                           micro_batch=x.micro_batch, steps=x.steps, threads=x.threads, warmup=2, fabtrain=None)
    builds = {"before": x.before, "after": x.after}
    with tempfile.TemporaryDirectory() as d:
        run_bench.make_inputs(d, a)
        tps = {k: [] for k in builds}
        ratios = []
        for r in range(x.rounds):
            got = {}
            for k in (["before", "after"] if r % 2 == 0 else ["after", "before"]):
                a.fabtrain = builds[k]
                got[k] = run_bench.fabtrain(a, d, 1, k)["tokens_per_s"]
                tps[k].append(got[k])
            ratios.append(got["after"] / got["before"])
            print(f"round {r + 1}: before {got['before']:.0f} tok/s, after {got['after']:.0f} tok/s, "
                  f"after/before {ratios[-1]:.3f}", flush=True)
    print(f"hidden {x.hidden}, {x.layers} layers, {x.micro_batch} x {x.max_length} tokens: before "
          f"{statistics.median(tps['before']):.0f} tok/s, after {statistics.median(tps['after']):.0f} tok/s, "
          f"after/before median {statistics.median(ratios):.3f} (rounds: {', '.join(f'{r:.3f}' for r in ratios)})")


if __name__ == "__main__":
    main()
