"""fabtrain serve's decode engine against Hugging Face generate() with its KV cache, on the same
random Llama folder, the same torch and the same number of threads (greedy, CPU).

  decode tokens/s at batch 1: tokens after the first over the time after the first (generate():
    (N - 1) / (time of N new tokens - time of 1), its prefill cancelling out);
  aggregate tokens/s of S concurrent streams: every token over the wall time (generate(): one
    batch of S same-length prompts, no padding; the engine: S requests at once).

  time to the first token of one --ttft-prompt-len (512) prompt: submit to the first token
    (generate(): max_new_tokens=1 on that prompt).

usage: decode_bench.py --decode-bench build/bench/serve/decode_bench [--threads 2] [--streams 8]
                       [--size 37m|5m] [--rounds 5] [--device cpu|cuda]
Prints the figures for each side and the ratios. A guard that fails the run (exit 1): in every
round, every stream's greedy tokens from the engine must equal generate()'s, or the two did not
compute the same thing. Not a test: timings on a shared machine are noise-prone; the sides run
in alternating rounds (--rounds, default 5) and each figure is the median, with its range.
--size 37m (default) or 5m: a model whose batch-1 step is bound by memory bandwidth, or by the
per-step costs around the GEMMs.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM


SIZES = {
    # ~37M parameters: the weights (148 MB in fp32) are read once a step, so a batch-1 step is
    # bound by memory bandwidth on both sides.
    "37m": dict(vocab_size=8192, hidden_size=512, intermediate_size=1376, num_hidden_layers=8,
                num_attention_heads=8, num_key_value_heads=4),
    # ~5M: small enough that the per-step costs around the GEMMs (Python, op dispatch) dominate.
    "5m": dict(vocab_size=4096, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
               num_attention_heads=4, num_key_value_heads=2),
}


def make_model(path, size="37m"):
    config = LlamaConfig(max_position_embeddings=1024, tie_word_embeddings=True, **SIZES[size])
    torch.manual_seed(0)
    LlamaForCausalLM(config).eval().save_pretrained(path)


def prompt(stream, length, vocab):
    # decode_bench.cc's prompts: stream s of length n.
    return [(7 + 31 * i + 101 * stream) % vocab for i in range(length)]


class Hf:
    def __init__(self, path, device):
        # fp32 on both sides: the guard compares greedy tokens exactly, which bf16's rounding of
        # a random model's near-equal logits would not allow.
        self.device = device
        self.model = LlamaForCausalLM.from_pretrained(path, dtype=torch.float32).eval().to(device)
        self.vocab = self.model.config.vocab_size
        self.generated = {}

    def timed(self, batch, n, length):
        ids = torch.tensor([prompt(s, length, self.vocab) for s in range(batch)], device=self.device)
        gen = GenerationConfig(do_sample=False, max_new_tokens=n, min_new_tokens=n,
                               eos_token_id=None, pad_token_id=0)
        sync()
        t0 = time.perf_counter()
        with torch.no_grad():
            out = self.model.generate(ids, attention_mask=torch.ones_like(ids), generation_config=gen)
        sync()  # the device's queued work is part of the time, as the engine's host reads are
        took = time.perf_counter() - t0
        assert out.shape[1] == length + n
        self.generated[(batch, n, length)] = out[:, length:].tolist()
        return took

    def round(self, a):
        """One round, as decode_bench.cc's: batch-1 decode tok/s, S-stream tok/s, time to first
        token, and the tokens generated."""
        single = (a.new_tokens - 1) / (self.timed(1, a.new_tokens, a.prompt_len) -
                                       self.timed(1, 1, a.prompt_len))
        aggregate = a.streams * a.new_tokens / self.timed(a.streams, a.new_tokens, a.prompt_len)
        ttft = self.timed(1, 1, a.ttft_prompt_len)
        return {"decode_tok_s_batch1": single, "aggregate_tok_s": aggregate, "ttft_s": ttft,
                "single_tokens": self.generated[(1, a.new_tokens, a.prompt_len)][0],
                "stream_tokens": self.generated[(a.streams, a.new_tokens, a.prompt_len)]}


def sync():
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def engine_round(a, path):
    out = subprocess.run(
        [a.decode_bench, "--model", path, "--device", a.device,
         "--threads", str(a.threads), "--streams",
         str(a.streams), "--prompt-len", str(a.prompt_len), "--new-tokens", str(a.new_tokens),
         "--repeats", "1", "--ttft-prompt-len", str(a.ttft_prompt_len)],
        check=True, capture_output=True, text=True, timeout=1800).stdout
    return json.loads(out.strip().splitlines()[-1])


def guard(engine, hf):
    """Both sides must have computed the same thing: every stream's greedy tokens equal.
    Returns what differs ("" when nothing does)."""
    if engine["single_tokens"] != hf["single"]:
        return "batch 1: engine %s vs HF %s" % (engine["single_tokens"][:16], hf["single"][:16])
    for s, (e, h) in enumerate(zip(engine["stream_tokens"], hf["streams"])):
        if e != h:
            first = next((i for i, (a, b) in enumerate(zip(e, h)) if a != b), min(len(e), len(h)))
            return "stream %d differs from token %d: engine %s vs HF %s" % (s, first, e[first:first + 8], h[first:first + 8])
    if len(engine["stream_tokens"]) != len(hf["streams"]):
        return "the engine ran %d streams, HF %d" % (len(engine["stream_tokens"]), len(hf["streams"]))
    return ""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--decode-bench", required=True, help="the decode_bench binary")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--size", choices=sorted(SIZES), default="37m")
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--prompt-len", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds of each side")
    parser.add_argument("--ttft-prompt-len", type=int, default=512)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    a = parser.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        print("decode_bench: cannot run on this machine: torch sees no CUDA device")
        sys.exit(2)
    torch.set_num_threads(a.threads)
    figures = ("decode_tok_s_batch1", "aggregate_tok_s", "ttft_s")
    runs = {"engine": {f: [] for f in figures}, "hf": {f: [] for f in figures}}
    with tempfile.TemporaryDirectory(prefix="decode_bench") as tmp:
        make_model(tmp, a.size)
        hf = Hf(tmp, a.device)
        hf.timed(1, 4, a.prompt_len)  # warm-up (the engine's binary warms up itself)
        # Alternating rounds, so a change in the machine's load reaches both sides alike.
        for r in range(a.rounds):
            for side, got in (("hf", hf.round(a)), ("engine", engine_round(a, tmp))):
                for f in figures:
                    runs[side][f].append(got[f])
                if side == "hf":
                    hf_tokens = {"single": got["single_tokens"], "streams": got["stream_tokens"]}
                else:
                    differs = guard(got, hf_tokens)
                    if differs:
                        print(f"GUARD FAILED (round {r + 1}): the engine's greedy tokens are not "
                              f"generate()'s: {differs}")
                        sys.exit(1)
    med = {side: {f: statistics.median(v) for f, v in fig.items()} for side, fig in runs.items()}
    span = {side: {f: (min(v), max(v)) for f, v in fig.items()} for side, fig in runs.items()}

    def show(side, f, fmt):
        lo, hi = span[side][f]
        return f"{fmt.format(med[side][f])} ({fmt.format(lo)}-{fmt.format(hi)})"

    e, h = med["engine"], med["hf"]
    print(f"model {a.size} (fp32 on {a.device}), threads {a.threads}, prompt {a.prompt_len} tokens, {a.new_tokens} new "
          f"tokens; median (range) of {a.rounds} alternating rounds")
    print(f"batch 1 decode tok/s:  engine {show('engine', 'decode_tok_s_batch1', '{:.1f}')}  "
          f"HF {show('hf', 'decode_tok_s_batch1', '{:.1f}')}  "
          f"ratio {e['decode_tok_s_batch1'] / h['decode_tok_s_batch1']:.2f}")
    print(f"{a.streams} streams tok/s:      engine {show('engine', 'aggregate_tok_s', '{:.1f}')}  "
          f"HF {show('hf', 'aggregate_tok_s', '{:.1f}')}  "
          f"ratio {e['aggregate_tok_s'] / h['aggregate_tok_s']:.2f}")
    print(f"{a.streams} streams / batch 1:  engine "
          f"{e['aggregate_tok_s'] / e['decode_tok_s_batch1']:.2f}  "
          f"HF {h['aggregate_tok_s'] / h['decode_tok_s_batch1']:.2f}")
    print(f"first token, {a.ttft_prompt_len}-token prompt (s): engine "
          f"{show('engine', 'ttft_s', '{:.3f}')}  HF {show('hf', 'ttft_s', '{:.3f}')}  "
          f"ratio (HF / engine) {h['ttft_s'] / e['ttft_s']:.2f}")
    print(f"guard: in every round every stream's {a.new_tokens} greedy tokens equal generate()'s")


if __name__ == "__main__":
    main()
