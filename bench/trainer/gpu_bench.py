#!/usr/bin/env python3
"""fabtrain on one GPU against PyTorch eager on the same GPU, side by side in one run.

Both train the same Llama-style decoder (default ~370M parameters: hidden 1024, 24 layers,
16 heads, SwiGLU 2816, vocab 32000, untied head) from the same config.json on the same token
stream, with the FSDP MixedPrecision recipe: fp32 master weights and optimizer state, bf16
compute, fused AdamW, the same micro-batch and sequence length, grad clipping at 1.0.

- fabtrain: `fabtrain --device cuda --torch-dtype bfloat16` (NCCL comm at world size 1, tensor
  shards, fused AdamW); its metrics.jsonl gives step_time_ms and gpu_peak_bytes.
- PyTorch eager with SDPA: Hugging Face transformers' LlamaForCausalLM built from the config (no
  download) with attn_implementation="sdpa" when `transformers` imports (--reference hf), else the
  plain eager Llama of torch_reference.py (--reference plain, F.scaled_dot_product_attention too);
  fp32 parameters under torch.autocast(bfloat16), AdamW(fused=True); with --recompute both
  checkpoint every decoder layer (HF's gradient_checkpointing_enable, fabtrain's --recompute).

The contenders alternate for --rounds rounds (the machine is shared); each round prints both
tokens/s, their ratio, MFU against the GPU's dense bf16 peak (6N + 12*L*d*T FLOPs per token; H100
and H200 SXM: 989 TFLOP/s, override with --peak-tflops) and peak GPU memory; the last line is the
median ratio. Goals: fabtrain >= 1.1x eager tokens/s, MFU >= 40% at ~370M ("350m") and >= 45% at
~1B ("1b") on an H100/H200, peak memory <= PyTorch's. Where FABKIT_BENCH_JSON names a file, the
figures are also written there as JSON (scripts/gpu-check collects them).
`--trace-steps N` makes fabtrain write Chrome traces in the first round and prints where its
step's time goes (trace_summary.py: GPU busy and idle, kernels by kind and by name); the JSON
gains "trace". Keep N below --warmup - 1 so the traced steps stay out of the timing. A trace that
is missing, unreadable or (on CUDA) without GPU activity fails the bench (exit 1) after the
figures are printed and written, with "trace_error" in the JSON saying why.

`--device cpu` runs the same comparison at a tiny size in fp32 (a smoke test of this script on a
machine without a GPU; its figures mean nothing for the goal).
"""
import argparse, json, os, random, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_model import SIZES, write_inputs  # noqa: E402
import trace_summary  # noqa: E402


def param_count(c):
    h, i, L, v = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    hd = h // c["num_attention_heads"]
    attn = h * hd * (2 * c["num_attention_heads"] + 2 * c["num_key_value_heads"])
    return 2 * v * h + L * (attn + 3 * h * i + 2 * h) + h


def flops_per_token(c, T):
    return 6 * param_count(c) + 12 * c["num_hidden_layers"] * c["hidden_size"] * T


def run_fabtrain(a, d, tag):
    out = os.path.join(d, "ft-" + tag)
    cmd = [a.fabtrain, "--model", os.path.join(d, "model"), "--data", os.path.join(d, "train.jsonl"),
           "--format", "input_ids", "--output", out, "--max-length", str(a.seq), "--micro-batch-size", str(a.batch),
           # One step more than is run, so --exit-after-steps ends it without the final checkpoint:
           # fp32 weights and AdamW state are 12 bytes a parameter (13 GB at ~1.1B), seconds of
           # writing that the reference does not do, and disk the GPU machine does not have to spare.
           "--max-steps", str(a.steps + 1), "--exit-after-steps", str(a.steps), "--lr", "1e-4", "--no-resume",
           "--device", a.device,
           "--torch-dtype", "bfloat16" if a.device == "cuda" else "float32", "--max-grad-norm", "1.0"]
    if a.trace_steps and tag == "0":
        # Round 1 only: tracing a step costs a little, and one run's steps say where the time goes.
        # The traced steps are the 3rd onwards: inside the warm-up while --trace-steps < --warmup - 1.
        cmd += ["--trace-steps", str(a.trace_steps)]
    if a.recompute:
        cmd += ["--recompute"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("fabtrain failed: " + " ".join(cmd) + "\n" + r.stderr[-3000:])
    rows = [json.loads(l) for l in open(os.path.join(out, "metrics.jsonl")) if l.strip()]
    timed = [x for x in rows if "step_time_ms" in x]
    if len(timed) != a.steps or any(f.startswith("checkpoint-") for f in os.listdir(out)):
        sys.exit(f"fabtrain in {out}: expected {a.steps} steps' metrics and no checkpoint, "
                 f"found {len(timed)} and {sorted(os.listdir(out))}")
    steady = timed[a.warmup:]
    med = statistics.median(x["step_time_ms"] for x in steady) / 1000
    res = {"tokens_per_s": a.batch * a.seq / med, "peak_bytes": max(x.get("gpu_peak_bytes", 0) for x in rows)}
    if a.trace_steps and tag == "0":
        # A trace that is missing or wrong must not cost the run's figures (on a GPU machine they
        # are minutes of scarce time): it is recorded, and bench() fails once the figures are out.
        try:
            res["trace"] = trace_summary.summarize([os.path.join(out, "trace")], top=15)
            print(trace_summary.render(res["trace"]), flush=True)
            if a.device == "cuda" and res["trace"]["mode"] != "gpu":
                res["trace_error"] = ("the trace of a CUDA run holds no GPU activity (no kernel or copy events): "
                                      "the CUDA profiler (CUPTI) recorded nothing; fabtrain's warnings say why:\n"
                                      + "\n".join(l for l in r.stderr.splitlines() if "trace" in l.lower())[-1500:])
        except ValueError as e:
            res["trace_error"] = f"fabtrain's traces in {out}/trace: {e}"
    shutil.rmtree(out, ignore_errors=True)  # the traces are large and summarised above
    return res


def eager_model(a, c):
    import torch
    if a.reference in ("auto", "hf"):
        try:
            from transformers import LlamaConfig, LlamaForCausalLM
            cfg = LlamaConfig(**{k: v for k, v in c.items() if k not in ("architectures", "torch_dtype")})
            cfg._attn_implementation = "sdpa"
            model = LlamaForCausalLM(cfg)
            if a.recompute:
                model.gradient_checkpointing_enable()
            return "hf-transformers-sdpa", model
        except ImportError:
            if a.reference == "hf":
                sys.exit("--reference hf: transformers does not import (pip install transformers)")
    sys.path.insert(0, HERE)
    from torch_reference import Llama
    if a.recompute:
        sys.exit("--recompute: the plain reference has no activation checkpointing; use --reference hf")
    return "plain-eager (torch_reference.py)", Llama(c)


def run_eager(a, d, c):
    import torch
    import torch.nn.functional as F
    dev = torch.device(a.device)
    torch.manual_seed(0)
    name, model = eager_model(a, c)
    model = model.to(dev)  # fp32 master weights
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    ids = [json.loads(l)["input_ids"] for l in open(os.path.join(d, "train.jsonl"))]
    stream = torch.tensor([t for x in ids for t in x])
    n = len(stream) // a.seq
    blocks = stream[: n * a.seq].view(n, a.seq)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    times = []
    for step in range(a.steps):
        batch = blocks[(step * a.batch) % (n - a.batch + 1):][: a.batch].to(dev)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
            out = model(batch)
            logits = out.logits if hasattr(out, "logits") else out
        loss = F.cross_entropy(logits[:, :-1].float().reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss.item()  # fabtrain reads its loss every step too
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times[a.warmup:])
    peak = torch.cuda.max_memory_allocated(dev) if dev.type == "cuda" else 0
    del model, opt
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return {"tokens_per_s": a.batch * a.seq / med, "peak_bytes": peak, "name": name}


def peak_flops(a):
    if a.peak_tflops:
        return a.peak_tflops * 1e12
    if a.device != "cuda":
        return None
    import torch
    name = torch.cuda.get_device_name(0)
    # Dense bf16 tensor-core peaks of the SXM parts (NVIDIA's data sheets, without sparsity).
    for key, tflops in (("H200", 989.0), ("H100", 989.0), ("A100", 312.0)):
        if key in name:
            return tflops * 1e12
    sys.exit(f"unknown GPU '{name}': pass --peak-tflops (dense bf16)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fabtrain", required=True)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--size", choices=sorted(SIZES), default=None, help="default: 350m on cuda, tiny on cpu")
    p.add_argument("--batch", type=int, default=None, help="sequences per step (default 8 on cuda, 2 on cpu)")
    p.add_argument("--seq", type=int, default=None, help="sequence length (default 2048 on cuda, 64 on cpu)")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reference", choices=["auto", "hf", "plain"], default="auto")
    p.add_argument("--peak-tflops", type=float, default=None)
    p.add_argument("--trace-steps", type=int, default=0)
    p.add_argument("--recompute", action="store_true", help="activation checkpointing per layer, both contenders")
    a = p.parse_args()
    gpu = a.device == "cuda"
    a.size = a.size or ("350m" if gpu else "tiny")
    a.batch = a.batch or (8 if gpu else 2)
    a.seq = a.seq or (2048 if gpu else 64)
    if a.warmup >= a.steps:
        sys.exit("--warmup must be below --steps")
    if a.trace_steps < 0 or (a.trace_steps and 2 + a.trace_steps > a.steps):
        sys.exit(f"--trace-steps {a.trace_steps}: fabtrain traces steps 3 to 2 + N, so N must be 0 to --steps - 2")
    with tempfile.TemporaryDirectory(prefix="fabtrain-gpu-bench-") as d:
        bench(a, d, gpu)


def bench(a, d, gpu):
    c = write_inputs(d, a.size, records=max(64, 2 * a.batch * a.steps), length=a.seq)
    fpt = flops_per_token(c, a.seq)
    peak = peak_flops(a)
    print(f"model {a.size}: {param_count(c) / 1e6:.1f}M parameters, batch {a.batch} x {a.seq} tokens, "
          f"{a.steps} steps ({a.warmup} warm-up), device {a.device}", flush=True)
    ratios, rounds, trace, trace_error = [], [], None, None
    for r in range(a.rounds):
        # Alternate who goes first: a shared machine drifts.
        order = ["fabtrain", "eager"] if r % 2 == 0 else ["eager", "fabtrain"]
        res = {}
        for who in order:
            res[who] = run_fabtrain(a, d, str(r)) if who == "fabtrain" else run_eager(a, d, c)
        if r == 0:
            trace = res["fabtrain"].pop("trace", None)
            trace_error = res["fabtrain"].pop("trace_error", None)
        ratio = res["fabtrain"]["tokens_per_s"] / res["eager"]["tokens_per_s"]
        ratios.append(ratio)
        line = f"round {r + 1}: fabtrain {res['fabtrain']['tokens_per_s']:.0f} tok/s vs {res['eager']['name']} " \
               f"{res['eager']['tokens_per_s']:.0f} tok/s: ratio {ratio:.3f}"
        if peak:
            line += f"; MFU fabtrain {res['fabtrain']['tokens_per_s'] * fpt / peak:.1%}, " \
                    f"eager {res['eager']['tokens_per_s'] * fpt / peak:.1%}"
        if gpu:
            line += f"; peak GPU memory fabtrain {res['fabtrain']['peak_bytes'] / 2**30:.2f} GiB, " \
                    f"eager {res['eager']['peak_bytes'] / 2**30:.2f} GiB"
        print(line, flush=True)
        rounds.append({who: {"tokens_per_s": round(x["tokens_per_s"], 1), "peak_bytes": x["peak_bytes"],
                             "mfu": round(x["tokens_per_s"] * fpt / peak, 4) if peak else None}
                       for who, x in res.items()})
        rounds[-1]["ratio"] = round(ratio, 4)
    print(f"median fabtrain/eager tokens/s over {a.rounds} rounds: {statistics.median(ratios):.3f}")
    if os.environ.get("FABKIT_BENCH_JSON"):
        with open(os.environ["FABKIT_BENCH_JSON"], "w") as f:
            json.dump({"size": a.size, "parameters": param_count(c), "batch": a.batch, "seq": a.seq,
                       "device": a.device, "recompute": a.recompute, "reference": res["eager"]["name"],
                       "median_ratio": round(statistics.median(ratios), 4),
                       "median_mfu_fabtrain": round(statistics.median(x["fabtrain"]["mfu"] for x in rounds), 4)
                       if peak else None,
                       "rounds": rounds, "trace": trace, "trace_error": trace_error}, f, indent=1)
    if trace_error:
        sys.exit(f"--trace-steps: {trace_error}\n(the figures above are complete; only the trace failed)")


if __name__ == "__main__":
    main()
