#!/usr/bin/env python3
"""The PyTorch (Python API, eager, CPU) side of the fabtrain benchmark.

Trains the same Llama-family decoder (RMSNorm, HF-convention RoPE, grouped-query attention,
SwiGLU) from the same config.json on the same pre-tokenized JSONL, packed into the same
max_length blocks, with fused AdamW, one process or DDP on Gloo. It is written the fast way a PyTorch
user would write it today: F.scaled_dot_product_attention (is_causal, enable_gqa: no mask tensor,
no repeated k/v; torch picks its flash kernel on CPU, flash/memory-efficient/cuDNN on a GPU) and
torch's fused F.rms_norm. With --weights (run_bench.py's loss guard, loss_guard.py) it starts from
the model.safetensors fabtrain loads and trains on fabtrain's batches in fabtrain's order (one
packed block a record); without, from its own seeded initialisation on its own order. Each step is
timed from its start to the end of its optimizer step, its loss read (as fabtrain reads its loss
every step). Prints one JSON line: {"ranks", "tokens_per_s" (timed tokens / the timed steps'
summed time), "step_ms_mean", "steps", "losses" (per step, the world's mean)}. Run with
.venv/bin/python3 (the torch wheel fabtrain links; run_bench.py passes its own interpreter).
"""
import argparse, json, os, sys, time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loss_guard  # noqa: E402


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, self.nh, self.nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        self.hd = c.get("head_dim", h // self.nh)
        self.q_proj = nn.Linear(h, self.nh * self.hd, bias=False)
        self.k_proj = nn.Linear(h, self.nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(h, self.nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.nh * self.hd, h, bias=False)
        i = c["intermediate_size"]
        self.gate_proj = nn.Linear(h, i, bias=False)
        self.up_proj = nn.Linear(h, i, bias=False)
        self.down_proj = nn.Linear(i, h, bias=False)
        self.in_norm = RMSNorm(h, c["rms_norm_eps"])
        self.post_norm = RMSNorm(h, c["rms_norm_eps"])

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        y = self.in_norm(x)
        q = self.q_proj(y).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(y).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(y).view(B, T, self.nkv, self.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.nh != self.nkv)
        o = o.transpose(1, 2).reshape(B, T, -1)
        x = x + self.o_proj(o)
        y = self.post_norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(y)) * self.up_proj(y))


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.tied = c.get("tie_word_embeddings", False)
        if not self.tied:
            self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=c.get("initializer_range", 0.02))
        hd = self.layers[0].hd
        self.inv_freq = 1.0 / (c.get("rope_theta", 10000.0) ** (torch.arange(0, hd, 2).float() / hd))

    def forward(self, ids):
        T = ids.shape[1]
        freqs = torch.outer(torch.arange(T, device=ids.device).float(), self.inv_freq.to(ids.device))
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        x = self.norm(x)
        return x @ self.embed.weight.t() if self.tied else self.lm_head(x)


def load_blocks(path, max_length, eos):
    stream = []
    with open(path) as f:
        for line in f:
            if line.strip():
                ids = json.loads(line)["input_ids"]
                stream += ids + ([] if ids and ids[-1] == eos else [eos])
    n = len(stream) // max_length
    return torch.tensor(stream[: n * max_length]).view(n, max_length)


def worker(rank, a):
    world = a.ranks
    torch.set_num_threads(a.intra_op_threads or max(1, a.threads // world))
    if world > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(a.port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
    c = json.load(open(os.path.join(a.model, "config.json")))
    torch.manual_seed(a.seed)
    model = Llama(c)
    eos = c.get("eos_token_id", 2)
    per_step = a.micro_batch_size * world
    if a.weights:
        loss_guard.load_into(model, loss_guard.read_safetensors(a.weights))
        blocks = loss_guard.read_blocks(a.data, a.max_length)
        mine = loss_guard.step_batches(len(blocks), a.micro_batch_size, a.steps, a.seed, rank, world)
    else:
        blocks = load_blocks(a.data, a.max_length, eos)
        order = torch.randperm(len(blocks), generator=torch.Generator().manual_seed(a.seed))
        mine = [order[(s * per_step) % (len(blocks) - per_step + 1):][rank:per_step:world].tolist()
                for s in range(a.steps)]
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    # fused=True: the contender (torch's own CPU kernel since 2.4); without it a CPU
    # AdamW is the per-parameter op-by-op loop, measured ~20 ms a step here against ~5 fused.
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, fused=True, **loss_guard.ADAMW)
    times, losses = [], []
    for step in range(a.steps):
        batch = blocks[mine[step]]
        t0 = time.perf_counter()
        logits = model(batch)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        seen = loss.detach().clone()
        if world > 1:
            dist.all_reduce(seen)  # also the step's barrier: every rank's step has ended
            seen /= world  # equal token counts per rank: the mean of means is the world's mean
        losses.append(seen.item())
        times.append(time.perf_counter() - t0)
    if rank == 0:
        timed = times[a.warmup :]
        mean = sum(timed) / len(timed)
        print(json.dumps({"ranks": world, "tokens_per_s": per_step * a.max_length / mean,
                          "step_ms_mean": mean * 1000, "steps": len(timed), "losses": losses}), flush=True)
    if world > 1:
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--micro-batch-size", type=int, default=4)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--intra-op-threads", type=int, default=0, help="per rank; overrides --threads")
    p.add_argument("--port", type=int, default=29611)
    p.add_argument("--weights", help="model.safetensors to start from (HF names); also takes fabtrain's batch order")
    a = p.parse_args()
    if a.ranks == 1:
        worker(0, a)
    else:
        mp.spawn(worker, args=(a,), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    main()
