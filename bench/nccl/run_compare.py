#!/usr/bin/env python3
"""fabcheck's NCCL all-reduce (fabcheck-nccl-runner) against nccl-tests' all_reduce_perf, same NCCL
library, same sizes, iterations, data type (float), op (sum) and environment, on this machine's
GPUs; prints busbw side by side with the ratio (goal: within 2%). With one GPU, busbw is
algbw * 2(n-1)/n = 0 for both, so algbw is compared instead and the table says so.

nccl-tests is built here from a source checkout the person running this fetched (never committed
to fabkit): make MPI=0 into OUT/nccl-tests-build, against the libnccl the runner links.
Runs alternate (nccl-tests, fabcheck) for --rounds rounds; medians are reported.

usage: run_compare.py --nccl-tests SRC [--runner PATH] [--gpus N] [-b 1M] [-e 1G] [-f 4]
                      [--iters 20] [--warmup 5] [--rounds 3] [--out DIR]
Exit: 0 compared, 1 a run failed, 2 cannot run on this machine (the reason is printed)."""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import nccl_child_driver  # noqa: E402


def cannot_run(why):
    print(f"bench/nccl: cannot run on this machine: {why}")
    sys.exit(2)


def size_bytes(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text.upper())
    if not m:
        sys.exit(f"size '{text}' is not N, NK, NM or NG")
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


def visible_gpus():
    if shutil.which("nvidia-smi") is None:
        cannot_run("nvidia-smi is not installed (no NVIDIA driver): this comparison needs a GPU")
    p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    n = sum(1 for l in p.stdout.splitlines() if l.startswith("GPU "))
    if p.returncode != 0 or n == 0:
        cannot_run(f"nvidia-smi -L lists no GPU (exit {p.returncode}: {(p.stdout + p.stderr).strip()[:200]})")
    return n


def linked_nccl(runner):
    """The libnccl.so.2 the runner loads, and an NCCL_HOME for nccl-tests' Makefile (include/, lib/)."""
    out = subprocess.run(["ldd", runner], capture_output=True, text=True).stdout
    m = re.search(r"libnccl\.so\.\d+ => (\S+)", out)
    if not m or not os.path.exists(m.group(1)):
        cannot_run(f"{runner} does not resolve libnccl (ldd: {out.strip()[:300]})")
    lib = os.path.realpath(m.group(1))
    libdir = os.path.dirname(lib)
    for inc in (os.path.join(os.path.dirname(libdir), "include"), "/usr/local/cuda/include", "/usr/include"):
        if os.path.exists(os.path.join(inc, "nccl.h")):
            return lib, libdir, inc
    cannot_run(f"no nccl.h beside {libdir}")


def build_nccl_tests(src, out, libdir, inc):
    if not os.path.exists(os.path.join(src, "src", "all_reduce.cu")):
        sys.exit(f"--nccl-tests {src}: not an nccl-tests checkout (no src/all_reduce.cu)")
    home = os.path.join(out, "nccl-home")  # the Makefile wants NCCL_HOME/include and NCCL_HOME/lib
    os.makedirs(home, exist_ok=True)
    for name, target in (("include", inc), ("lib", libdir)):
        link = os.path.join(home, name)
        if not os.path.islink(link):
            os.symlink(target, link)
    build = os.path.join(out, "nccl-tests-build")
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    cmd = ["make", "-C", src, f"-j{os.cpu_count()}", "MPI=0", f"CUDA_HOME={cuda}", f"NCCL_HOME={home}",
           f"BUILDDIR={build}"]
    print("building nccl-tests:", " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"nccl-tests build failed (exit {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    exe = os.path.join(build, "all_reduce_perf")
    if not os.path.exists(exe):
        sys.exit(f"nccl-tests built but {exe} is missing")
    return exe


def run_nccl_tests(exe, gpus, a, env):
    cmd = [exe, "-b", str(a.b), "-e", str(a.e), "-f", str(a.f), "-g", str(gpus), "-n", str(a.iters),
           "-w", str(a.warmup), "-c", "1", "-d", "float", "-o", "sum"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if p.returncode != 0:
        sys.exit(f"all_reduce_perf failed (exit {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}")
    rows, version = {}, None
    for line in p.stdout.splitlines():
        m = re.search(r"NCCL version (\S+)", line)
        if m:
            version = m.group(1)
        t = line.split()
        # size count type redop root | out-of-place: time algbw busbw #wrong | in-place: ...
        if len(t) >= 13 and t[0].isdigit() and t[2] == "float":
            if t[8] not in ("0", "N/A"):
                sys.exit(f"all_reduce_perf reports {t[8]} wrong elements at {t[0]} B")
            rows[int(t[0])] = {"time_us": float(t[5]), "algbw": float(t[6]), "busbw": float(t[7])}
    if not rows:
        sys.exit(f"no result rows in all_reduce_perf's output:\n{p.stdout[-2000:]}")
    return rows, version, " ".join(cmd)


def run_fabcheck(runner, gpus, sizes, a, env):
    out = nccl_child_driver.run(runner, gpus, sizes, a.iters, a.warmup, timeout_ms=120000,
                                device_per_rank=True, base_env=env)
    bad = [r for r in out if r["status"] != "ok"]
    if bad:
        sys.exit("fabcheck-nccl-runner failed: " + "; ".join(f"rank {r['rank']}: {r['status']}: "
                                                           f"{r.get('reason')}" for r in bad)
                 + "\n" + "\n".join(bad[0]["log_tail"]))
    res = out[0]["result"]
    # Every rank times the same collective; the slowest rank is what a job waits for.
    rows = {}
    for i, s in enumerate(res["sizes"]):
        slowest = max((r["result"]["sizes"][i] for r in out), key=lambda x: x["time_us"])
        rows[s["bytes"]] = {"time_us": slowest["time_us"], "algbw": slowest["algbw_gbps"],
                            "busbw": slowest["busbw_gbps"]}
    return rows, res.get("nccl_version")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nccl-tests", required=True, help="nccl-tests source checkout (fetched by you)")
    ap.add_argument("--runner", default=os.path.join(HERE, "../../build-notorch/cli/fabcheck-nccl-runner"))
    ap.add_argument("--gpus", type=int, default=0, help="ranks, one per GPU (default: every GPU)")
    ap.add_argument("-b", default="1M")
    ap.add_argument("-e", default="1G")
    ap.add_argument("-f", type=int, default=4)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    a.b, a.e = size_bytes(a.b), size_bytes(a.e)
    runner = os.path.realpath(a.runner)
    if not os.access(runner, os.X_OK):
        cannot_run(f"{runner} is not built (fabcheck was built without NCCL, or build the "
                   "fabcheck-nccl-runner target)")
    gpus = a.gpus or visible_gpus()
    lib, libdir, inc = linked_nccl(runner)
    out = a.out or tempfile.mkdtemp(prefix="fabkit-bench-nccl-")
    exe = build_nccl_tests(os.path.abspath(a.nccl_tests), out, libdir, inc)
    env = dict(os.environ)
    # One libnccl for both at run time, and its version line in both logs.
    env["LD_LIBRARY_PATH"] = libdir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env.setdefault("NCCL_DEBUG", "VERSION")

    ref, mine, cmd, ver = [], [], None, None
    for _ in range(a.rounds):
        rows, ver, cmd = run_nccl_tests(exe, gpus, a, env)
        ref.append(rows)
        sizes = sorted(rows)
        fab, fab_ver = run_fabcheck(runner, gpus, sizes, a, env)
        mine.append(fab)
    key = "busbw" if gpus > 1 else "algbw"
    print(f"GPUs (ranks): {gpus}; NCCL: {lib} (nccl-tests reports {ver}, fabcheck-nccl-runner {fab_ver})")
    print(f"nccl-tests: {cmd}")
    print(f"fabcheck:   nccl_child_driver.run(ranks={gpus}, iters={a.iters}, warmup={a.warmup}, device per rank)")
    if gpus == 1:
        print("one rank: busbw = algbw * 2(n-1)/n = 0 for both, so algbw is compared")
    print(f"medians of {a.rounds} alternated rounds; out-of-place for nccl-tests; fabcheck = its slowest rank")
    print(f"{'bytes':>12} {'nccl-tests ' + key:>18} {'fabcheck ' + key:>16} {'ratio':>7}  within 2%")
    worst = 0.0
    for s in sizes:
        r = statistics.median(x[s][key] for x in ref)
        m = statistics.median(x[s][key] for x in mine)
        ratio = m / r if r > 0 else float("nan")
        worst = max(worst, abs(ratio - 1) if r > 0 else 0)
        print(f"{s:>12} {r:>18.2f} {m:>16.2f} {ratio:>7.3f}  {'yes' if abs(ratio - 1) <= 0.02 else 'NO'}")
    print(f"largest deviation: {worst * 100:.1f}%")


if __name__ == "__main__":
    main()
