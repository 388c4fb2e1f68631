"""fabtrain serve's decode engine against Hugging Face generate() with its KV cache, on the same
random Llama folder, the same torch and the same number of threads (greedy, CPU).

  decode tokens/s at batch 1: tokens after the first over the time after the first (generate():
    (N - 1) / (time of N new tokens - time of 1), its prefill cancelling out);
  aggregate tokens/s of S concurrent streams: every token over the wall time (generate(): one
    batch of S same-length prompts, no padding; the engine: S requests at once).

  time to the first token of one --ttft-prompt-len (512) prompt: submit to the first token
    (generate(): max_new_tokens=1 on that prompt).

usage: decode_bench.py --decode-bench build/bench/serve/decode_bench [--threads 2] [--streams 8]
Prints the figures for each side and the ratios. A guard that fails the run (exit 1): every
stream's greedy tokens from the engine must equal generate()'s, or the two did not compute the
same thing. Not a test: timings on a shared machine are noise-prone; the figures are medians of
--repeats runs.
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


def make_model(path):
    # ~37M parameters: large enough that the GEMMs, not the per-token overheads, dominate.
    config = LlamaConfig(vocab_size=8192, hidden_size=512, intermediate_size=1376,
                         num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=4,
                         max_position_embeddings=1024, tie_word_embeddings=True)
    torch.manual_seed(0)
    LlamaForCausalLM(config).eval().save_pretrained(path)


def prompt(stream, length, vocab):
    # decode_bench.cc's prompts: stream s of length n.
    return [(7 + 31 * i + 101 * stream) % vocab for i in range(length)]


def hf_figures(path, prompt_len, new_tokens, streams, repeats, ttft_len):
    model = LlamaForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    vocab = model.config.vocab_size
    generated = {}

    def timed(batch, n, length=prompt_len):
        ids = torch.tensor([prompt(s, length, vocab) for s in range(batch)])
        gen = GenerationConfig(do_sample=False, max_new_tokens=n, min_new_tokens=n,
                               eos_token_id=None, pad_token_id=0)
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), generation_config=gen)
        took = time.perf_counter() - t0
        assert out.shape[1] == length + n
        generated[(batch, n, length)] = out[:, length:].tolist()
        return took

    timed(1, 4)  # warm-up
    single, aggregate, ttft = [], [], []
    for _ in range(repeats):
        single.append((new_tokens - 1) / (timed(1, new_tokens) - timed(1, 1)))
        aggregate.append(streams * new_tokens / timed(streams, new_tokens))
        ttft.append(timed(1, 1, ttft_len))
    tokens = {"single": generated[(1, new_tokens, prompt_len)][0],
              "streams": generated[(streams, new_tokens, prompt_len)]}
    return statistics.median(single), statistics.median(aggregate), statistics.median(ttft), tokens


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
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--prompt-len", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ttft-prompt-len", type=int, default=512)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="decode_bench") as tmp:
        make_model(tmp)
        hf_single, hf_aggregate, hf_ttft, hf_tokens = hf_figures(
            tmp, args.prompt_len, args.new_tokens, args.streams, args.repeats, args.ttft_prompt_len)
        out = subprocess.run(
            [args.decode_bench, "--model", tmp, "--threads", str(args.threads), "--streams",
             str(args.streams), "--prompt-len", str(args.prompt_len), "--new-tokens",
             str(args.new_tokens), "--repeats", str(args.repeats), "--ttft-prompt-len",
             str(args.ttft_prompt_len)],
            check=True, capture_output=True, text=True, timeout=1800).stdout
    engine = json.loads(out.strip().splitlines()[-1])
    print(f"threads {args.threads}, prompt {args.prompt_len} tokens, {args.new_tokens} new tokens, "
          f"median of {args.repeats}")
    print(f"batch 1 decode tok/s:  engine {engine['decode_tok_s_batch1']:.1f}  "
          f"HF {hf_single:.1f}  ratio {engine['decode_tok_s_batch1'] / hf_single:.2f}")
    print(f"{args.streams} streams tok/s:      engine {engine['aggregate_tok_s']:.1f}  "
          f"HF {hf_aggregate:.1f}  ratio {engine['aggregate_tok_s'] / hf_aggregate:.2f}")
    print(f"{args.streams} streams / batch 1:  engine "
          f"{engine['aggregate_tok_s'] / engine['decode_tok_s_batch1']:.2f}  "
          f"HF {hf_aggregate / hf_single:.2f}")
    print(f"first token, {args.ttft_prompt_len}-token prompt (s): engine {engine['ttft_s']:.3f}  "
          f"HF {hf_ttft:.3f}  ratio (HF / engine) {hf_ttft / engine['ttft_s']:.2f}")
    differs = guard(engine, hf_tokens)
    if differs:
        print(f"GUARD FAILED: the engine's greedy tokens are not generate()'s: {differs}")
        sys.exit(1)
    print(f"guard: every stream's {args.new_tokens} greedy tokens equal generate()'s")


if __name__ == "__main__":
    main()
