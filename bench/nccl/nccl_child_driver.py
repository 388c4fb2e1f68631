#!/usr/bin/env python3
"""Drive N fabcheck-nccl-runner ranks on this machine over the child protocol (fd 3 out, stdin in;
fabric/nccl_runner/child_protocol.h), the way run_nccl_allreduce does between two agents, without
the agents: for the 1-rank proof, for N ranks on N local GPUs (the nccl-tests comparison), and for
two ranks in two network namespaces sharing one GPU (--prefix per rank, e.g. 'ip netns exec nsA').

usage (CLI): nccl_child_driver.py RUNNER --ranks N --sizes 1048576,... [--iters 20] [--warmup 5]
             [--device-per-rank] [--prefix 'ip netns exec {rank}' ...] [--rank-env K=V{rank} ...]
             [--timeout-ms 60000]
Prints one JSON object: {"ranks": [{"rank", "status", "result" | "reason", "log_tail"}]}.
Exit 0 when every rank returned a RESULT with correct sums, 1 otherwise."""
import argparse
import json
import os
import select
import shlex
import subprocess
import sys
import shutil
import tempfile
import time


def start_rank(runner, rank, world, args, prefix, env, logdir):
    r, w = os.pipe()
    argv = shlex.split(prefix) + [runner] + args
    log = open(os.path.join(logdir, f"rank{rank}.log"), "w+")
    # The child writes protocol lines on fd 3: the shell's redirection puts our pipe there.
    cmd = ["sh", "-c", f'exec "$@" 3>&{w}', "sh"] + argv
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                         pass_fds=(w,), env=env, text=True)
    os.close(w)
    return {"rank": rank, "proc": p, "ctl": LineReader(r), "log": log}


class LineReader:
    """Protocol lines from a pipe, each wait bounded. Not a buffered file object's readline under
    select(): that reads every line a child wrote at once (PROGRESS then RESULT, say) into the
    file's buffer and returns the first, and select() then does not see the rest, so the driver
    waited for the child's exit or its deadline for a line it already held."""

    def __init__(self, fd):
        self.fd = fd
        self.buf = b""
        self.eof = False

    def next_line(self, deadline):
        """The next line without its newline; "" at end of file (a last line without a newline
        is returned first); None when the deadline passes first."""
        while True:
            if b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                return line.decode("utf-8", "replace")
            if self.eof:
                line, self.buf = self.buf, b""
                return line.decode("utf-8", "replace")
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 65536)
                if chunk:
                    self.buf += chunk
                else:
                    self.eof = True


def next_line(rank, deadline):
    return rank["ctl"].next_line(deadline)


def log_tail(rank, n=40):
    rank["log"].flush()
    rank["log"].seek(0)
    return rank["log"].read().splitlines()[-n:]


def run(runner, world, sizes, iters=20, warmup=5, timeout_ms=60000, device_per_rank=False,
        prefixes=None, rank_env=None, base_env=None):
    # The ranks' logs live only for this call: their tails are in the results.
    logdir = tempfile.mkdtemp(prefix="fabkit-nccl-driver-")
    try:
        return run_in(logdir, runner, world, sizes, iters, warmup, timeout_ms, device_per_rank,
                      prefixes, rank_env, base_env)
    finally:
        shutil.rmtree(logdir, ignore_errors=True)


def run_in(logdir, runner, world, sizes, iters, warmup, timeout_ms, device_per_rank, prefixes,
           rank_env, base_env):
    ranks = []
    for i in range(world):
        args = ["--rank", str(i), "--world-size", str(world), "--sizes", ",".join(map(str, sizes)),
                "--iters", str(iters), "--warmup", str(warmup), "--timeout-ms", str(timeout_ms)]
        if device_per_rank:
            args += ["--device", str(i)]
        env = dict(base_env if base_env is not None else os.environ)
        for kv in rank_env or []:
            k, v = kv.replace("{rank}", str(i)).split("=", 1)
            env[k] = v
        prefix = (prefixes[i] if prefixes and len(prefixes) > 1 else (prefixes or [""])[0])
        ranks.append(start_rank(runner, i, world, args, prefix.replace("{rank}", str(i)), env, logdir))
    out = []
    deadline = time.monotonic() + timeout_ms / 1000.0
    first = [next_line(r, deadline) for r in ranks]
    if all(l is not None and l.startswith("READY") for l in first):
        uid = first[0].split(" ", 1)[1]
        for r in ranks:
            r["proc"].stdin.write(f"GO {uid}\n")
            r["proc"].stdin.flush()
        for r, l in zip(ranks, first):
            while True:
                # Each PROGRESS restarts the deadline, as in run_nccl_allreduce.
                l = next_line(r, time.monotonic() + timeout_ms / 1000.0)
                if l is None or not l.startswith("PROGRESS"):
                    break
            out.append(finish(r, l))
    else:
        for r, l in zip(ranks, first):
            try:
                r["proc"].stdin.write("STOP\n")
                r["proc"].stdin.flush()
            except BrokenPipeError:
                pass
            out.append(finish(r, l))
    for r in ranks:
        try:
            r["proc"].wait(timeout=timeout_ms / 1000.0)
        except subprocess.TimeoutExpired:
            r["proc"].kill()
            r["proc"].wait()
        try:
            r["proc"].stdin.close()
        except BrokenPipeError:
            pass
        os.close(r["ctl"].fd)
        r["log"].close()
    return out


def finish(r, line):
    res = {"rank": r["rank"], "log_tail": log_tail(r)}
    if line is None:
        res.update(status="failed", reason="timeout waiting for the child")
    elif line == "":
        res.update(status="failed", reason="the child exited without a result")
    elif line.startswith("RESULT "):
        result = json.loads(line[7:])
        ok = all(s["correct"] for s in result["sizes"])
        res.update(status="ok" if ok else "failed", result=result)
        if not ok:
            res["reason"] = "wrong sums"
    elif line.startswith("UNAVAILABLE "):
        res.update(status="unavailable", reason=line[12:])
    elif line.startswith("FAILED "):
        res.update(status="failed", reason=line[7:])
    else:
        res.update(status="failed", reason=f"unexpected line: {line[:80]}")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runner")
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--sizes", default="1048576")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--timeout-ms", type=int, default=60000)
    ap.add_argument("--device-per-rank", action="store_true", help="rank i on CUDA device i")
    ap.add_argument("--prefix", action="append", help="command before the runner; {rank} substituted; "
                    "give once for all ranks or once per rank")
    ap.add_argument("--rank-env", action="append", help="K=V for every rank; {rank} substituted")
    a = ap.parse_args()
    if not os.access(a.runner, os.X_OK):
        sys.exit(f"{a.runner}: not an executable fabcheck-nccl-runner (build the fabcheck-nccl-runner target)")
    sizes = [int(s) for s in a.sizes.split(",")]
    out = run(a.runner, a.ranks, sizes, a.iters, a.warmup, a.timeout_ms, a.device_per_rank,
              a.prefix, a.rank_env)
    print(json.dumps({"ranks": out}, indent=1))
    sys.exit(0 if all(r["status"] == "ok" for r in out) else 1)


if __name__ == "__main__":
    main()
