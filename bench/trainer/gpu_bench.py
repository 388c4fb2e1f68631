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

Both are timed the same way, synchronized at both ends: each step from a point where the GPU
had finished all earlier work to the point where it has finished this step's (fabtrain's
step_time_ms at --log-every 1, which waits for the device before it reads the clock; PyTorch's
torch.cuda.synchronize() on both sides of its step, loss.item() inside). The first --warmup steps
are dropped; tokens/s = the timed steps' tokens / their summed time. --rounds rounds (default 3, of
--steps 25 with --warmup 5: 20 timed steps), the contenders alternating who goes first; the last
line is the median ratio. Fewer rounds or timed steps only with --smoke (a run of the script).

The loss guard (loss_guard.py): both start from the same HF-initialised weights (model.safetensors,
which fabtrain loads with --model), train on the same batches in fabtrain's order with the same
AdamW at a constant learning rate, and every step's loss must agree within the tolerance of the
precision (bf16 on a GPU, fp32 on the CPU); a mismatch fails the bench (exit 1) before any ratio.

Each round prints both tokens/s, their ratio, MFU against the GPU's dense bf16 peak (the exact SKU,
PEAK_TFLOPS below; --peak-tflops for another) with and without the input embedding (6N + 12*L*d*T
FLOPs per token; N with the embedding table counts a lookup as a matmul, as figures before issue
#38 did; without it N is the parameters that do matmuls) and peak GPU memory. The versions that ran
(torch, CUDA, cuDNN, transformers) and the SDPA kernels each contender dispatched (from a profiled
warm-up step, and from fabtrain's trace) are printed and recorded. Goals: fabtrain >= 1.1x eager
tokens/s, MFU >= 40% at ~370M ("350m") and >= 45% at ~1B ("1b") on an H100/H200, peak memory <=
PyTorch's. Where FABKIT_BENCH_JSON names a file, the figures are also written there as JSON
(scripts/gpu-check collects them).
`--trace-steps N` makes fabtrain write Chrome traces in the first round and prints where its
step's time goes (trace_summary.py: GPU busy and idle, kernels by kind and by name); the JSON
gains "trace", with the traced steps' span beside their step_time_ms (a cross-check of the timer).
Keep N below --warmup - 1 so the traced steps stay out of the timing. A trace that
is missing, unreadable or (on CUDA) without GPU activity fails the bench (exit 1) after the
figures are printed and written, with "trace_error" in the JSON saying why.

`--device cpu` runs the same comparison (and the guard, at the fp32 tolerance) at a tiny size in
fp32 (a smoke test of this script on a machine without a GPU; its figures mean nothing for the goal).
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_model import SIZES, llama_config  # noqa: E402
import loss_guard  # noqa: E402
import trace_summary  # noqa: E402

# Dense (no 2:4 sparsity) bf16 tensor-core peaks, TFLOP/s, by the name CUDA gives the device.
# NVIDIA's data sheets print them with sparsity (twice these): H100 SXM 1,979, H100 PCIe 1,513,
# H100 NVL 1,671, H200 (SXM) 1,979, H200 NVL 1,671 ("Specifications 1/2 lower without sparsity").
# The order matters: "H100 NVL" and "H100 PCIe" before the SXM part's "H100 80GB HBM3".
PEAK_TFLOPS = (("H200 NVL", 835.0), ("H200", 989.0), ("H100 NVL", 835.0), ("H100 PCIe", 756.0),
               ("H100 80GB HBM3", 989.0), ("H100 SXM", 989.0), ("A100", 312.0))


def param_count(c, embedding=True):
    """Parameters; embedding=False leaves out the input embedding table (a lookup, no FLOPs)."""
    h, i, L, v = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    hd = h // c["num_attention_heads"]
    attn = h * hd * (2 * c["num_attention_heads"] + 2 * c["num_key_value_heads"])
    return (2 if embedding else 1) * v * h + L * (attn + 3 * h * i + 2 * h) + h


def flops_per_token(c, T, embedding=True):
    return 6 * param_count(c, embedding) + 12 * c["num_hidden_layers"] * c["hidden_size"] * T


def timed_tokens_per_s(tokens, seconds, warmup):
    """One figure for every contender: the steps after the warm-up, their tokens over their summed
    time (each step timed between two points where the device had no earlier work queued)."""
    return sum(tokens[warmup:]) / sum(seconds[warmup:])


SDPA_OP = "_scaled_dot_product_"


def sdpa_ops_in_trace(trace_dir):
    """The SDPA kernels (aten::_scaled_dot_product_{flash,efficient,cudnn}_attention...) in
    fabtrain's Chrome traces."""
    found = set()
    for f in sorted(os.listdir(trace_dir)):
        if f.endswith(".json"):
            with open(os.path.join(trace_dir, f)) as fh:
                for e in json.load(fh).get("traceEvents", []):
                    if SDPA_OP in str(e.get("name", "")) and "backward" not in str(e.get("name", "")):
                        found.add(e["name"])
    return sorted(found)


def run_fabtrain(a, d, tag):
    out = os.path.join(d, "ft-" + tag)
    cmd = [a.fabtrain, "--model", os.path.join(d, "model"), "--data", os.path.join(d, "train.jsonl"),
           "--output", out, "--max-length", str(a.seq), "--micro-batch-size", str(a.batch),
           # One step more than is run, so --exit-after-steps ends it without the final checkpoint:
           # fp32 weights and AdamW state are 12 bytes a parameter (13 GB at ~1.1B), seconds of
           # writing that the reference does not do, and disk the GPU machine does not have to spare.
           "--max-steps", str(a.steps + 1), "--exit-after-steps", str(a.steps), "--lr", str(a.lr), "--no-resume",
           "--device", a.device,
           "--torch-dtype", "bfloat16" if a.device == "cuda" else "float32"] + loss_guard.FABTRAIN_FLAGS
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
    res = {"tokens_per_s": timed_tokens_per_s([x["tokens"] for x in timed], [x["step_time_ms"] / 1000 for x in timed],
                                              a.warmup),
           "losses": [x["loss"] for x in timed], "peak_bytes": max(x.get("gpu_peak_bytes", 0) for x in rows)}
    if a.trace_steps and tag == "0":
        # A trace that is missing or wrong must not cost the run's figures (on a GPU machine they
        # are minutes of scarce time): it is recorded, and bench() fails once the figures are out.
        try:
            res["trace"] = trace_summary.summarize([os.path.join(out, "trace")], top=15)
            print(trace_summary.render(res["trace"]), flush=True)
            traced = {int(f.rsplit("-", 1)[1].split(".")[0]) for f in res["trace"]["files"]}
            spans = [x["step_time_ms"] for x in timed if x["step"] in traced]
            # The cross-check of the timer: a traced step's step_time_ms against the trace's span of it.
            res["trace"]["step_time_ms_of_traced_steps"] = round(sum(spans) / len(spans), 3) if spans else None
            res["sdpa_ops"] = sdpa_ops_in_trace(os.path.join(out, "trace"))
            print(f"traced steps: step_time_ms {res['trace']['step_time_ms_of_traced_steps']} against the trace's "
                  f"span {res['trace']['step_ms']} ms (busy {res['trace']['busy_ms']} ms); SDPA ops "
                  f"{', '.join(res['sdpa_ops']) or 'none'}", flush=True)
            if a.device == "cuda" and res["trace"]["mode"] != "gpu":
                res["trace_error"] = ("the trace of a CUDA run holds no GPU activity (no kernel or copy events): "
                                      "the CUDA profiler (CUPTI) recorded nothing; fabtrain's warnings say why:\n"
                                      + "\n".join(l for l in r.stderr.splitlines() if "trace" in l.lower())[-1500:])
        except ValueError as e:
            res["trace_error"] = f"fabtrain's traces in {out}/trace: {e}"
    shutil.rmtree(out, ignore_errors=True)  # the traces are large and summarised above
    return res


def eager_model(a, c):
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


def run_eager(a, d, c, weights):
    import torch
    import torch.nn.functional as F
    dev = torch.device(a.device)
    with dev:  # made on the device (its random initialisation there is fast), then overwritten:
        name, model = eager_model(a, c)
    loss_guard.load_into(model, weights)  # the weights fabtrain loads from model.safetensors
    model = model.to(dev)  # fp32 master weights
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, fused=True, **loss_guard.ADAMW)
    blocks = loss_guard.read_blocks(os.path.join(d, "train.jsonl"), a.seq)
    order = loss_guard.step_batches(len(blocks), a.batch, a.steps)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    times, losses, sdpa = [], [], []
    for step in range(a.steps):
        batch = blocks[order[step]].to(dev)
        # The first step runs under the profiler (host ops only: cheap, and inside the warm-up) to
        # see which SDPA kernel torch dispatched.
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) if step == 0 else None
        if prof:
            prof.__enter__()
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
        losses.append(loss.item())  # fabtrain reads its loss every step too
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        times.append(time.perf_counter() - t0)
        if prof:
            prof.__exit__(None, None, None)
            sdpa = sorted({e.name for e in prof.events() if SDPA_OP in e.name and "backward" not in e.name})
    peak = torch.cuda.max_memory_allocated(dev) if dev.type == "cuda" else 0
    del model, opt
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return {"tokens_per_s": timed_tokens_per_s([a.batch * a.seq] * a.steps, times, a.warmup), "losses": losses,
            "peak_bytes": peak, "name": name, "sdpa_ops": sdpa}


def versions(a):
    import torch
    v = {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}
    try:
        import transformers
        v["transformers"] = transformers.__version__
    except ImportError:
        v["transformers"] = None
    if a.device == "cuda":
        v["gpu"] = torch.cuda.get_device_name(0)
    return v


def peak_tflops_of(device_name):
    """The dense bf16 peak of the GPU CUDA names so (None: not in PEAK_TFLOPS)."""
    return next((tflops for key, tflops in PEAK_TFLOPS if key in device_name), None)


def peak_flops(a):
    if a.peak_tflops:
        return a.peak_tflops * 1e12
    if a.device != "cuda":
        return None
    import torch
    name = torch.cuda.get_device_name(0)
    tflops = peak_tflops_of(name)
    if tflops:
        return tflops * 1e12
    sys.exit(f"unknown GPU '{name}': pass --peak-tflops (its dense bf16 tensor-core peak, half the data "
             f"sheet's figure with sparsity)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fabtrain", required=True)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--size", choices=sorted(SIZES), default=None, help="default: 350m on cuda, tiny on cpu")
    p.add_argument("--batch", type=int, default=None, help="sequences per step (default 8 on cuda, 2 on cpu)")
    p.add_argument("--seq", type=int, default=None, help="sequence length (default 2048 on cuda, 64 on cpu)")
    p.add_argument("--steps", type=int, default=25)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--smoke", action="store_true",
                   help="allow fewer than 3 rounds of 20 timed steps (a run of the script, not a figure)")
    p.add_argument("--reference", choices=["auto", "hf", "plain"], default="auto")
    p.add_argument("--peak-tflops", type=float, default=None)
    p.add_argument("--trace-steps", type=int, default=0)
    p.add_argument("--recompute", action="store_true", help="activation checkpointing per layer, both contenders")
    a = p.parse_args()
    gpu = a.device == "cuda"
    a.size = a.size or ("350m" if gpu else "tiny")
    a.batch = a.batch or (8 if gpu else 2)
    a.seq = a.seq or (2048 if gpu else 64)
    if a.warmup < 0 or a.warmup >= a.steps:
        sys.exit("--warmup must be 0 or more and below --steps")
    if not a.smoke and (a.rounds < 3 or a.steps - a.warmup < 20):
        sys.exit(f"--rounds {a.rounds}, {a.steps - a.warmup} timed steps: a figure needs 3+ rounds of 20+ timed "
                 f"steps (--smoke for a run of the script only)")
    if a.trace_steps < 0 or (a.trace_steps and 2 + a.trace_steps > a.steps):
        sys.exit(f"--trace-steps {a.trace_steps}: fabtrain traces steps 3 to 2 + N, so N must be 0 to --steps - 2")
    with tempfile.TemporaryDirectory(prefix="fabtrain-gpu-bench-") as d:
        bench(a, d, gpu)


def bench(a, d, gpu):
    c = llama_config(a.size)
    peak = peak_flops(a)  # an unknown GPU is refused before minutes of writing weights
    weights_how = loss_guard.write_guarded_inputs(d, c, records=max(64, a.batch * a.steps), seq=a.seq, device=a.device)
    weights = loss_guard.read_safetensors(os.path.join(d, "model", "model.safetensors"))
    dtype = "bfloat16" if gpu else "float32"
    fpt, fpt_ne = flops_per_token(c, a.seq), flops_per_token(c, a.seq, embedding=False)
    v = versions(a)
    print(f"model {a.size}: {param_count(c) / 1e6:.1f}M parameters ({param_count(c, False) / 1e6:.1f}M without the "
          f"input embedding), batch {a.batch} x {a.seq} tokens, {a.rounds} rounds of {a.steps} steps "
          f"({a.warmup} warm-up), device {a.device}; weights: {weights_how}", flush=True)
    print("versions: " + ", ".join(f"{k} {x}" for k, x in v.items()) +
          (f"; peak {peak / 1e12:.0f} TFLOP/s dense bf16" if peak else ""), flush=True)
    ratios, rounds, trace, trace_error, sdpa, guard_worst = [], [], None, None, {}, 0.0
    doc = {"size": a.size, "parameters": param_count(c), "parameters_without_embedding": param_count(c, False),
           "batch": a.batch, "seq": a.seq, "steps": a.steps, "warmup": a.warmup, "device": a.device,
           "recompute": a.recompute, "smoke": a.smoke, "versions": v, "weights": weights_how,
           "peak_tflops": peak / 1e12 if peak else None, "rounds": rounds}

    def write_json():
        if os.environ.get("FABKIT_BENCH_JSON"):
            with open(os.environ["FABKIT_BENCH_JSON"], "w") as f:
                json.dump(doc, f, indent=1)

    for r in range(a.rounds):
        # Alternate who goes first: a shared machine drifts.
        order = ["fabtrain", "eager"] if r % 2 == 0 else ["eager", "fabtrain"]
        res = {}
        for who in order:
            res[who] = run_fabtrain(a, d, str(r)) if who == "fabtrain" else run_eager(a, d, c, weights)
        if r == 0:
            trace = res["fabtrain"].pop("trace", None)
            trace_error = res["fabtrain"].pop("trace_error", None)
            sdpa = {"eager": res["eager"]["sdpa_ops"], "fabtrain": res["fabtrain"].get("sdpa_ops")}
            doc.update(reference=res["eager"]["name"], sdpa_ops=sdpa, trace=trace, trace_error=trace_error)
            print(f"SDPA ops: eager {', '.join(sdpa['eager']) or 'none'}; fabtrain "
                  f"{', '.join(sdpa['fabtrain'] or []) or 'not traced (--trace-steps)'}", flush=True)
        try:
            guard_worst = max(guard_worst, loss_guard.check(res["fabtrain"]["losses"], res["eager"]["losses"], dtype,
                                                            f"round {r + 1}: "))
        except loss_guard.LossMismatch as e:
            doc["loss_guard"] = {"passed": False, "dtype": dtype, "rtol": loss_guard.RTOL[dtype], "error": str(e),
                                 "fabtrain_losses": res["fabtrain"]["losses"], "eager_losses": res["eager"]["losses"]}
            write_json()
            sys.exit(f"loss guard: {e}")
        ratio = res["fabtrain"]["tokens_per_s"] / res["eager"]["tokens_per_s"]
        ratios.append(ratio)
        line = f"round {r + 1}: fabtrain {res['fabtrain']['tokens_per_s']:.0f} tok/s vs {res['eager']['name']} " \
               f"{res['eager']['tokens_per_s']:.0f} tok/s: ratio {ratio:.3f}"
        if peak:
            line += "; MFU (without / with the embedding) " + ", ".join(
                f"{who} {res[who]['tokens_per_s'] * fpt_ne / peak:.1%} / {res[who]['tokens_per_s'] * fpt / peak:.1%}"
                for who in ("fabtrain", "eager"))
        if gpu:
            line += f"; peak GPU memory fabtrain {res['fabtrain']['peak_bytes'] / 2**30:.2f} GiB, " \
                    f"eager {res['eager']['peak_bytes'] / 2**30:.2f} GiB"
        print(line, flush=True)
        rounds.append({who: {"tokens_per_s": round(x["tokens_per_s"], 1), "peak_bytes": x["peak_bytes"],
                             "mfu": round(x["tokens_per_s"] * fpt / peak, 4) if peak else None,
                             "mfu_without_embedding": round(x["tokens_per_s"] * fpt_ne / peak, 4) if peak else None,
                             "losses": [round(l, 6) for l in x["losses"]]}
                       for who, x in res.items()})
        rounds[-1]["ratio"] = round(ratio, 4)
    print(f"loss guard passed: every round's {a.steps} losses agree, largest relative difference {guard_worst:.1e} "
          f"({dtype} tolerance {loss_guard.RTOL[dtype]:g})")
    print(f"median fabtrain/eager tokens/s over {a.rounds} rounds: {statistics.median(ratios):.3f}")
    doc.update(median_ratio=round(statistics.median(ratios), 4),
               loss_guard={"passed": True, "dtype": dtype, "rtol": loss_guard.RTOL[dtype],
                           "largest_relative_difference": guard_worst})
    if peak:
        doc["median_mfu_fabtrain"] = round(statistics.median(x["fabtrain"]["mfu"] for x in rounds), 4)
        doc["median_mfu_fabtrain_without_embedding"] = round(
            statistics.median(x["fabtrain"]["mfu_without_embedding"] for x in rounds), 4)
    write_json()
    if trace_error:
        sys.exit(f"--trace-steps: {trace_error}\n(the figures above are complete; only the trace failed)")


if __name__ == "__main__":
    main()
