#!/usr/bin/env python3
"""Independent reference for fabkit's Llama forward (tests/integration/trainer_ref).

Written from the HF transformers LlamaForCausalLM / MistralForCausalLM eager semantics with plain
torch ops (transformers and safetensors are not installed here); safetensors files are read and
written by hand with struct + json, following the format spec.

  make --out ROOT --cases A,B   per case, ROOT/<case>: a tiny random model (config.json +
                                safetensors), inputs and the reference logits/loss in
                                reference.safetensors, eval.jsonl + eval_reference.json
  check-saved --dir D --ref R [--dir D2 --ref R2 ...]   strictly parse fabkit-saved checkpoints
                                (HF conventions); their weights must reproduce R's logits
"""
import argparse
import json
import math
import os
import struct
import sys

import torch

DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16, "I64": torch.int64}
NAMES = {v: k for k, v in DTYPES.items()}

CASES = {
    # name: (config overrides, dtype, shard)
    "llama_mha": ({"num_key_value_heads": 4}, "F32", False),
    "llama_gqa": ({"num_key_value_heads": 2, "rope_theta": 500000.0}, "F32", False),
    "llama_tied": ({"num_key_value_heads": 1, "tie_word_embeddings": True}, "F32", False),
    "llama_sharded": ({"num_key_value_heads": 2}, "F32", True),
    "mistral_window": ({"num_key_value_heads": 2, "sliding_window": 5,
                        "architectures": ["MistralForCausalLM"], "model_type": "mistral"}, "F32", False),
    "llama_bf16": ({"num_key_value_heads": 2}, "BF16", False),
}


def write_safetensors(path, tensors):
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        raw = t.view(torch.uint8).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path, strict=False):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data), f"{path}: header length {n} beyond file"
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    if strict:  # what fabkit promises for HF loading
        assert n % 8 == 0, f"{path}: header not padded to 8"
        assert meta.get("format") == "pt", f"{path}: metadata {meta}"
        assert list(header) == sorted(header), f"{path}: names not sorted"
    out, base, end = {}, 8 + n, 0
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, f = e["data_offsets"]
        assert b == end, f"{path}: {name} not contiguous"
        end = f
        dt = DTYPES[e["dtype"]]
        buf = bytearray(data[base + b:base + f])
        if dt == torch.bfloat16:
            t = torch.frombuffer(buf, dtype=torch.int16).view(torch.bfloat16)
        else:
            t = torch.frombuffer(buf, dtype=dt) if buf else torch.empty(0, dtype=dt)
        out[name] = t.reshape(e["shape"]).clone()
    assert base + end == len(data), f"{path}: trailing bytes"
    return out


def base_config(case):
    c = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32,
         "intermediate_size": 56, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 4, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
         "max_position_embeddings": 64, "vocab_size": 300, "tie_word_embeddings": False,
         "torch_dtype": "float32", "bos_token_id": 256, "eos_token_id": 257, "pad_token_id": 258,
         "hidden_act": "silu", "initializer_range": 0.02}
    if case not in CASES:
        raise SystemExit(f"unknown case {case}; known: {', '.join(sorted(CASES))}")
    c.update(CASES[case][0])
    if CASES[case][1] == "BF16":
        c["torch_dtype"] = "bfloat16"
    return c


def make_weights(c, gen):
    h, d = c["hidden_size"], c["hidden_size"] // c["num_attention_heads"]
    kv = c["num_key_value_heads"] * d
    def rnd(*shape):
        return torch.randn(*shape, generator=gen) * 0.2  # larger than 0.02 so logits differ visibly
    w = {"model.embed_tokens.weight": rnd(c["vocab_size"], h), "model.norm.weight": 1 + rnd(h)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "self_attn.q_proj.weight"] = rnd(h, h)
        w[p + "self_attn.k_proj.weight"] = rnd(kv, h)
        w[p + "self_attn.v_proj.weight"] = rnd(kv, h)
        w[p + "self_attn.o_proj.weight"] = rnd(h, h)
        w[p + "mlp.gate_proj.weight"] = rnd(c["intermediate_size"], h)
        w[p + "mlp.up_proj.weight"] = rnd(c["intermediate_size"], h)
        w[p + "mlp.down_proj.weight"] = rnd(h, c["intermediate_size"])
        w[p + "input_layernorm.weight"] = 1 + rnd(h)
        w[p + "post_attention_layernorm.weight"] = 1 + rnd(h)
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = rnd(c["vocab_size"], h)
    return w


# ---- the reference forward (HF eager semantics, written out) --------------------------------
def rms_norm(x, weight, eps):
    dtype = x.dtype
    xf = x.to(torch.float32)
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return weight * xf.to(dtype)


def rope_cos_sin(c, seq, dtype):
    d = c["hidden_size"] // c["num_attention_heads"]
    inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    freqs = torch.outer(torch.arange(seq).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def forward(c, w, ids, mask):
    dtype = w["model.embed_tokens.weight"].dtype
    b, t = ids.shape
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    d = c["hidden_size"] // nh
    x = w["model.embed_tokens.weight"][ids]
    cos, sin = rope_cos_sin(c, t, dtype)
    allowed = torch.ones(t, t, dtype=torch.bool).tril()
    if c.get("sliding_window"):
        q_pos, k_pos = torch.arange(t)[:, None], torch.arange(t)[None, :]
        allowed &= (q_pos - k_pos) < c["sliding_window"]
    allowed = allowed[None, None] & mask.bool()[:, None, None, :]
    bias = torch.zeros(b, 1, t, t, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        hs = rms_norm(x, w[p + "input_layernorm.weight"], c["rms_norm_eps"])
        q = (hs @ w[p + "self_attn.q_proj.weight"].T).view(b, t, nh, d).transpose(1, 2)
        k = (hs @ w[p + "self_attn.k_proj.weight"].T).view(b, t, nkv, d).transpose(1, 2)
        v = (hs @ w[p + "self_attn.v_proj.weight"].T).view(b, t, nkv, d).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(nh // nkv, dim=1)  # == HF repeat_kv (each kv head serves a group)
        v = v.repeat_interleave(nh // nkv, dim=1)
        if dtype == torch.float32:
            # HF's eager attention: an independent formula, exact to 1e-5 in fp32.
            att = (q @ k.transpose(2, 3)) / math.sqrt(d) + bias
            att = torch.softmax(att, dim=-1, dtype=torch.float32).to(dtype)
            o = att @ v
        else:
            # Low precision: HF's default attention (attn_implementation "sdpa", sdpa_attention_forward:
            # repeat_kv, then SDPA with the boolean mask). Eager rounds the scores and the
            # probabilities to bf16 where SDPA keeps them in fp32; the two HF paths differ by ~1.5
            # bf16 ulps of the largest logit here, more than the bound, so the comparison is with
            # the path HF runs by default.
            o = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        o = o.transpose(1, 2).reshape(b, t, nh * d)
        x = x + o @ w[p + "self_attn.o_proj.weight"].T
        hs = rms_norm(x, w[p + "post_attention_layernorm.weight"], c["rms_norm_eps"])
        gate = torch.nn.functional.silu(hs @ w[p + "mlp.gate_proj.weight"].T)
        x = x + (gate * (hs @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], c["rms_norm_eps"])
    head = w["model.embed_tokens.weight"] if c["tie_word_embeddings"] else w["lm_head.weight"]
    return x @ head.T


def loss_of(logits, labels):
    lp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    tgt = labels[:, 1:]
    keep = tgt != -100
    nll = -lp.gather(-1, tgt.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return (nll * keep).sum() / keep.sum(), int(keep.sum())


def make(args):
    root = args.out
    for case in args.cases.split(","):
        args.case, args.out = case, os.path.join(root, case)
        make_case(args)


def make_case(args):
    gen = torch.Generator().manual_seed(args.seed)
    c = base_config(args.case)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    dtype = DTYPES[CASES[args.case][1]]
    w = {k: v.to(dtype) for k, v in make_weights(c, gen).items()}
    if CASES[args.case][2]:
        names = sorted(w)
        halves = [names[: len(names) // 2], names[len(names) // 2:]]
        wmap = {}
        for i, part in enumerate(halves):
            fname = f"model-{i + 1:05d}-of-00002.safetensors"
            write_safetensors(os.path.join(args.out, fname), {n: w[n] for n in part})
            wmap.update({n: fname for n in part})
        with open(os.path.join(args.out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": wmap}, f)
    else:
        write_safetensors(os.path.join(args.out, "model.safetensors"), w)
    t = 12
    ids = torch.randint(0, 256, (2, t), generator=gen)
    mask = torch.ones(2, t, dtype=torch.int64)
    mask[1, 8:] = 0  # right padding on the second row
    ids[1, 8:] = 258
    labels = ids.masked_fill(mask == 0, -100)
    with torch.no_grad():
        logits = forward(c, w, ids, mask)
    loss, tokens = loss_of(logits, labels)
    write_safetensors(os.path.join(args.out, "reference.safetensors"),
                      {"input_ids": ids, "attention_mask": mask, "labels": labels,
                       "logits": logits.float(), "loss": loss.reshape(1),
                       "tokens": torch.tensor([tokens])})
    # The same sequences as pre-tokenized JSONL for `fabtrain eval` (padding mode): each row
    # ends with EOS (257) so the pipeline adds nothing; the reference loss over these rows:
    rows = [ids[0, :t - 1].tolist() + [257], ids[1, :7].tolist() + [257]]
    with open(os.path.join(args.out, "eval.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps({"input_ids": r}) + "\n")
    eids = torch.tensor([rows[0], rows[1] + [258] * (t - 8)])
    emask = torch.tensor([[1] * t, [1] * 8 + [0] * (t - 8)])
    with torch.no_grad():
        elogits = forward(c, w, eids, emask)
    eloss, etokens = loss_of(elogits, eids.masked_fill(emask == 0, -100))
    with open(os.path.join(args.out, "eval_reference.json"), "w") as f:
        json.dump({"mean_loss": eloss.item(), "perplexity": math.exp(eloss.item()), "tokens": etokens,
                   "max_length": t}, f)


def check_saved(args):
    assert len(args.dir) == len(args.ref), "give --dir and --ref in pairs"
    for d, r in zip(args.dir, args.ref):
        args_one = argparse.Namespace(dir=d, ref=r)
        check_saved_one(args_one)


def check_saved_one(args):
    files = sorted(f for f in os.listdir(args.dir) if f.endswith(".safetensors"))
    index = os.path.join(args.dir, "model.safetensors.index.json")
    w = {}
    if os.path.exists(index):
        wmap = json.load(open(index))["weight_map"]
        assert set(wmap.values()) == set(files), (wmap, files)
        for f in files:
            part = read_safetensors(os.path.join(args.dir, f), strict=True)
            for n in part:
                assert wmap[n] == f, f"{n} is in {f} but the index says {wmap[n]}"
            w.update(part)
    else:
        assert files == ["model.safetensors"], files
        w = read_safetensors(os.path.join(args.dir, "model.safetensors"), strict=True)
    c = json.load(open(os.path.join(args.dir, "config.json")))
    ref_c = json.load(open(os.path.join(args.ref, "config.json")))
    for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "vocab_size", "tie_word_embeddings", "rope_theta", "rms_norm_eps"):
        assert c[k] == ref_c[k], (k, c[k], ref_c[k])
    ref = read_safetensors(os.path.join(args.ref, "reference.safetensors"))
    with torch.no_grad():
        logits = forward(c, w, ref["input_ids"], ref["attention_mask"])
    diff = (logits.float() - ref["logits"]).abs().max().item()
    assert diff == 0.0, f"saved weights give logits differing by {diff}"
    print(f"ok {len(w)} tensors in {len(files)} file(s)")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--out", required=True)
    m.add_argument("--cases", required=True, help="comma list of: " + ",".join(sorted(CASES)))
    m.add_argument("--seed", type=int, default=1234)
    s = sub.add_parser("check-saved")
    s.add_argument("--dir", required=True, action="append")
    s.add_argument("--ref", required=True, action="append")
    a = ap.parse_args()
    {"make": make, "check-saved": check_saved}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
