#!/usr/bin/env python3
"""The reference for fabcheck-gpu-bench's figures, through torch's own CUDA path on the same GPUs
and the same sizes: bf16 matmul TFLOPS (torch.matmul -> cuBLAS(Lt)), device-to-device copy
(Tensor.copy_, read + write bytes counted as fabcheck counts them), pinned host->device and
device->host copies (pin_memory=True, non_blocking), each GPU alone, then every GPU at once.
Timed with CUDA events after warm-up, like fabcheck-gpu-bench.

usage: torch_reference.py [--gemm-n 8192] [--gemm-warmup 10] [--gemm-iters 50]
                          [--device-copy-bytes N] [--device-copy-iters 50]
                          [--host-copy-bytes N] [--host-copy-iters 10]
Prints one JSON object {"gpus": [{"index", "name", "figures": {name: value}}]}; exit 2 without a GPU."""
import argparse
import json
import sys


def timed(torch, stream, warmup, iters, fn):
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            fn()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        for _ in range(iters):
            fn()
        stop.record(stream)
    return start, stop


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gemm-n", type=int, default=8192)
    ap.add_argument("--gemm-warmup", type=int, default=10)
    ap.add_argument("--gemm-iters", type=int, default=50)
    ap.add_argument("--device-copy-bytes", type=int, default=512 << 20)
    ap.add_argument("--device-copy-warmup", type=int, default=5)
    ap.add_argument("--device-copy-iters", type=int, default=50)
    ap.add_argument("--host-copy-bytes", type=int, default=256 << 20)
    ap.add_argument("--host-copy-warmup", type=int, default=3)
    ap.add_argument("--host-copy-iters", type=int, default=10)
    a = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print(f"torch_reference: cannot import torch ({e}); run it with the .venv python", file=sys.stderr)
        sys.exit(2)
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        print("torch_reference: torch sees no CUDA device", file=sys.stderr)
        sys.exit(2)
    # fabcheck-gpu-bench asks cuBLAS for fp32 accumulation (CUBLAS_COMPUTE_32F): torch may reduce in
    # bf16 unless told not to.
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    out = []
    pinned = []
    for i in range(torch.cuda.device_count()):
        dev = torch.device("cuda", i)
        torch.cuda.set_device(dev)
        s = torch.cuda.Stream(dev)
        g = {"index": i, "name": torch.cuda.get_device_name(i), "figures": {}}
        n = a.gemm_n
        x = (torch.rand(n, n, device=dev) * 2 - 1).to(torch.bfloat16)
        y = (torch.rand(n, n, device=dev) * 2 - 1).to(torch.bfloat16)
        start, stop = timed(torch, s, a.gemm_warmup, a.gemm_iters, lambda: torch.matmul(x, y))
        stop.synchronize()
        g["figures"]["gemm_bf16"] = 2.0 * n ** 3 * a.gemm_iters / (start.elapsed_time(stop) / 1e3) / 1e12
        del x, y
        src = torch.empty(a.device_copy_bytes, dtype=torch.uint8, device=dev).fill_(0x5A)
        dst = torch.empty_like(src)
        start, stop = timed(torch, s, a.device_copy_warmup, a.device_copy_iters, lambda: dst.copy_(src, non_blocking=True))
        stop.synchronize()
        g["figures"]["device_copy"] = 2.0 * a.device_copy_bytes * a.device_copy_iters / (start.elapsed_time(stop) / 1e3) / 1e9
        del src, dst
        host = torch.empty(a.host_copy_bytes, dtype=torch.uint8, pin_memory=True).fill_(0x3C)
        d = torch.empty(a.host_copy_bytes, dtype=torch.uint8, device=dev)
        for name, fn in (("h2d", lambda: d.copy_(host, non_blocking=True)),
                         ("d2h", lambda: host.copy_(d, non_blocking=True))):
            start, stop = timed(torch, s, a.host_copy_warmup, a.host_copy_iters, fn)
            stop.synchronize()
            g["figures"][name] = a.host_copy_bytes * a.host_copy_iters / (start.elapsed_time(stop) / 1e3) / 1e9
        pinned.append((dev, s, host, d))
        out.append(g)
    if len(pinned) > 1:
        for name in ("h2d_concurrent", "d2h_concurrent"):
            runs = []
            for dev, s, host, d in pinned:
                with torch.cuda.device(dev):
                    fn = (lambda d=d, host=host: d.copy_(host, non_blocking=True)) if name.startswith("h2d") else \
                         (lambda d=d, host=host: host.copy_(d, non_blocking=True))
                    runs.append(timed(torch, s, a.host_copy_warmup, a.host_copy_iters, fn))
            for g, (start, stop) in zip(out, runs):
                stop.synchronize()
                g["figures"][name] = a.host_copy_bytes * a.host_copy_iters / (start.elapsed_time(stop) / 1e3) / 1e9
    print(json.dumps({"torch": torch.__version__, "gpus": out}))


if __name__ == "__main__":
    main()
