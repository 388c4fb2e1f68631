#!/usr/bin/env python3
"""fabtrain vs PyTorch (Python API, eager CPU with SDPA and fused RMSNorm, the same torch 2.x wheel fabtrain links): tokens/s at 1 rank and at
2 ranks (fabtrain sharded vs torch DDP on Gloo), and fabtrain's per-rank sharded state at 1/2/4
ranks. The machine is noisy, so the contenders alternate and the ratio is the median of the
per-round ratios.

PyTorch runs twice per round:
  "torch"      as a user writes it (the reference script's default threads: all cores per process
               for ATen, OpenBLAS's own default pool),
  "torch+plan" with fabtrain's thread plan copied from fabtrain's log (ATen intra-op threads via
               torch.set_num_threads, OpenBLAS via OPENBLAS_NUM_THREADS), so the ratio against it
               is fabtrain's own code (model, sharding, optimizer) like for like.

Every contender is timed the same way: each step from its start to the end of its optimizer step
with its loss read (fabtrain's step_time_ms at --log-every 1; on the CPU nothing is left queued),
the first --warmup steps dropped, tokens/s = the timed steps' tokens / their summed time.

The loss guard (loss_guard.py): all three start from the same HF-initialised model.safetensors,
train on the same batches in fabtrain's order with the same AdamW at a constant learning rate,
and every step's loss must agree within the float32 tolerance, or the bench exits 1 naming the
step: a ratio between two runs that computed different things is not printed.

  .venv/bin/python3 bench/trainer/run_bench.py --fabtrain BUILD/trainer/app/fabtrain [--rounds 3]
      [--ranks 1] [--no-memory]   (only the 1-rank comparison; skip the sharded-state table)
      [--threads N]   (ATen intra-op threads per rank for both; on a loaded machine 1 keeps
                       OpenMP from spinning against other processes)

(run it with the Python of .venv/, whose torch is the one fabtrain was built against)
"""
import argparse, json, os, random, re, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import loss_guard  # noqa: E402


def blas():
    try:
        return os.path.realpath("/etc/alternatives/libblas.so.3-x86_64-linux-gnu")
    except OSError:
        return "unknown"


def make_inputs(d, a, seed=0):
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": a.hidden,
           "intermediate_size": a.hidden * 8 // 3 // 16 * 16, "num_hidden_layers": a.layers,
           "num_attention_heads": 8, "num_key_value_heads": 4, "vocab_size": a.vocab,
           "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
           "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "float32",
           "initializer_range": 0.02, "bos_token_id": 1, "eos_token_id": 2}
    return loss_guard.write_guarded_inputs(d, cfg, records=600, seq=a.max_length, seed=seed)


def torch_version():
    import torch
    return torch.__version__


def timed_tokens_per_s(tokens, seconds, warmup):
    """The same figure for every contender: the steps after the warm-up, their tokens over their
    summed time."""
    return sum(tokens[warmup:]) / sum(seconds[warmup:])


THREAD_LINE = re.compile(r"threads per rank: ATen intra-op (\d+), BLAS (\d+|untouched)")


def fabtrain(a, d, ranks, tag, steps=None, mb=None):
    out = os.path.join(d, "ft-" + tag)
    cmd = [a.fabtrain, "--model", os.path.join(d, "model"), "--data", os.path.join(d, "train.jsonl"),
           "--output", out, "--max-length", str(a.max_length), "--micro-batch-size", str(mb or a.micro_batch),
           "--max-steps", str(steps or a.steps), "--lr", "1e-4", "--no-resume", "--nproc", str(ranks),
           "--device", "cpu"] + loss_guard.FABTRAIN_FLAGS
    if a.threads:
        cmd += ["--threads", str(a.threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("fabtrain failed: " + " ".join(cmd) + "\n" + r.stderr[-3000:])
    rows = [json.loads(l) for l in open(os.path.join(out, "metrics.jsonl")) if l.strip()]
    rows = [x for x in rows if "step_time_ms" in x]
    warmup = a.warmup if len(rows) > a.warmup else 0
    plan = THREAD_LINE.search(r.stdout + r.stderr)
    if not plan:
        sys.exit("fabtrain's log has no 'threads per rank' line:\n" + (r.stdout + r.stderr)[-3000:])
    return {"tokens_per_s": timed_tokens_per_s([x["tokens"] for x in rows], [x["step_time_ms"] / 1000 for x in rows], warmup),
            "losses": [x["loss"] for x in rows], "state_bytes_per_rank": rows[-1]["state_bytes_per_rank"],
            "max_rss_bytes": rows[-1]["max_rss_bytes"], "intra_op": int(plan.group(1)),
            "blas": None if plan.group(2) == "untouched" else int(plan.group(2))}


def torch_ref(a, d, ranks, plan=None):
    env = dict(os.environ)
    extra = ["--intra-op-threads", str(a.threads)] if a.threads else []
    if plan:
        extra = ["--intra-op-threads", str(plan["intra_op"])]
        if plan["blas"] is not None:
            env["OPENBLAS_NUM_THREADS"] = str(plan["blas"])
    cmd = [sys.executable, os.path.join(HERE, "torch_reference.py"), "--model", os.path.join(d, "model"),
           "--data", os.path.join(d, "train.jsonl"), "--ranks", str(ranks), "--steps", str(a.steps),
           "--warmup", str(a.warmup), "--micro-batch-size", str(a.micro_batch), "--max-length", str(a.max_length),
           "--port", str(random.randrange(20000, 60000)), "--weights", os.path.join(d, "model", "model.safetensors")] + extra
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("torch reference failed: " + " ".join(cmd) + "\n" + r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fabtrain", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--warmup", type=int, default=4)
    p.add_argument("--micro-batch", type=int, default=4)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vocab", type=int, default=4096)
    p.add_argument("--ranks", default="1,2", help="comma-separated rank counts to compare (1 and/or 2)")
    p.add_argument("--no-memory", action="store_true", help="skip the sharded state per rank table")
    p.add_argument("--threads", type=int, default=0, help="ATen intra-op threads per rank for both (default: each its own)")
    p.add_argument("--smoke", action="store_true",
                   help="allow fewer than 3 rounds of 20 timed steps (a check of the script, not a figure)")
    a = p.parse_args()
    if a.warmup < 0 or a.steps <= a.warmup:
        sys.exit(f"--steps {a.steps} --warmup {a.warmup}: at least one step must be timed")
    if not a.smoke and (a.rounds < 3 or a.steps - a.warmup < 20):
        sys.exit(f"--rounds {a.rounds}, {a.steps - a.warmup} timed steps: a figure needs 3+ rounds of 20+ timed "
                 f"steps (--smoke for a run of the script only)")
    rank_counts = [int(r) for r in a.ranks.split(",")]
    if not rank_counts or any(r not in (1, 2) for r in rank_counts):
        sys.exit(f"--ranks {a.ranks}: expected 1, 2 or 1,2")
    print(f"BLAS: {blas()}  (must be openblas-pthread for meaningful numbers)")
    print(f"torch {torch_version()}; model: hidden {a.hidden}, {a.layers} layers, vocab {a.vocab}; micro-batch {a.micro_batch} x "
          f"{a.max_length} tokens per rank; {a.steps} steps, first {a.warmup} dropped; {a.rounds} rounds")
    with tempfile.TemporaryDirectory(prefix="fabtrain-bench-") as d:
        print(f"weights: {make_inputs(d, a)}")
        for ranks in rank_counts:
            ft, pt, pp, ratios, plan_ratios, worst = [], [], [], [], [], []
            for rnd in range(a.rounds):
                # Alternate who goes first: the machine's load drifts.
                if rnd % 2 == 0:
                    f = fabtrain(a, d, ranks, f"{ranks}-{rnd}"); t = torch_ref(a, d, ranks); tp = torch_ref(a, d, ranks, f)
                else:
                    t = torch_ref(a, d, ranks); f = fabtrain(a, d, ranks, f"{ranks}-{rnd}"); tp = torch_ref(a, d, ranks, f)
                for name, ref in (("torch", t), ("torch+plan", tp)):
                    try:
                        loss_guard.check(f["losses"], ref["losses"], "float32", f"{ranks} rank(s), round {rnd + 1}, fabtrain vs {name}: ")
                    except loss_guard.LossMismatch as e:
                        sys.exit(f"loss guard: {e}")
                worst.append(max(abs(x - y) / abs(y) for ref in (t, tp) for x, y in zip(f["losses"], ref["losses"])))
                ft.append(f["tokens_per_s"]); pt.append(t["tokens_per_s"]); pp.append(tp["tokens_per_s"])
                ratios.append(f["tokens_per_s"] / t["tokens_per_s"]); plan_ratios.append(f["tokens_per_s"] / tp["tokens_per_s"])
            label = "1 rank (fabtrain vs torch eager)" if ranks == 1 else "2 ranks (fabtrain sharded vs torch DDP/Gloo)"
            print(f"{label}  [fabtrain's plan: ATen {f['intra_op']}, BLAS {f['blas']} per rank]")
            print(f"    fabtrain {statistics.median(ft):7.0f} tok/s   torch {statistics.median(pt):7.0f} tok/s   "
                  f"ratio median {statistics.median(ratios):.2f}x  (rounds: {', '.join(f'{r:.2f}' for r in ratios)})")
            print(f"    fabtrain {statistics.median(ft):7.0f} tok/s   torch+plan {statistics.median(pp):7.0f} tok/s   "
                  f"ratio median {statistics.median(plan_ratios):.2f}x  (rounds: {', '.join(f'{r:.2f}' for r in plan_ratios)})")
            print(f"    loss guard passed: {a.steps} steps' losses agree, largest relative difference "
                  f"{max(worst):.1e} (float32 tolerance {loss_guard.RTOL['float32']:g})")
        base = None
        for ranks in () if a.no_memory else (1, 2, 4):
            m = fabtrain(a, d, ranks, f"mem-{ranks}", steps=1, mb=1)
            base = base or m["state_bytes_per_rank"]
            print(f"sharded state per rank at {ranks} rank(s): {m['state_bytes_per_rank'] / 2**20:8.2f} MiB "
                  f"({m['state_bytes_per_rank'] / base:.3f} of 1 rank)  peak RSS {m['max_rss_bytes'] / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
