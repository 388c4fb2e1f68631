#!/usr/bin/python3
"""The RDMA all-reduce against the socket ones on one soft-RoCE link (issue #37): gloo-ibverbs
(fabkit's ring on Gloo's ibverbs transport, the RDMA row of `fabcheck pair` without a GPU) beside
fabkit-socket and gloo-tcp, between two qemu VMs of the tests/vm harness (rxe0 over each eth0), all
in one boot.

Per round and per size every contender runs once (fresh rank processes, fresh connection), in an
order that rotates from round to round; the figure per run is the slower rank's busbw. Reported
per size: each contender's median busbw and the median of the per-round ratios gloo-ibverbs /
fabkit-socket and gloo-ibverbs / gloo-tcp (a ratio within one round compares the contenders under
the same load of this shared machine). The VM's accelerator (TCG or KVM) is printed with the
figures: under TCG the guest's CPU, not the wire, bounds every contender.

The ranks are bench/allreduce/fabkit-allreduce-rank (stripped and copied into each VM over ssh);
the image holds BUILD/release/fabcheck and the libraries both need.

  sudo /usr/bin/python3 bench/allreduce/vm_rdma_bench.py --build BUILD [--rounds 5]
       [--sizes 65536,1048576,4194304] [--iters 5] [--markdown]
"""
import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "vm"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SRC, "bench", "rdma"))
import perftest  # noqa: E402
from run_bench import fmt_size  # noqa: E402
from vm_cluster import Skip, VmCluster, build_image  # noqa: E402

CONTENDERS = ["gloo-ibverbs", "fabkit", "gloo-tcp"]  # fabkit-allreduce-rank's --transport names
LABEL = {"gloo-ibverbs": "gloo-ibverbs", "fabkit": "fabkit-socket", "gloo-tcp": "gloo-tcp"}
RANK = "/tmp/fabkit-allreduce-rank"


def ship(c, i, path):
    with open(path, "rb") as f:
        r = subprocess.run(c.ssh_argv(i, "cat > %s && chmod +x %s" % (RANK, RANK)), stdin=f,
                           capture_output=True, timeout=120)
    if r.returncode != 0:
        sys.exit("vm_rdma_bench.py: copying the rank binary to vm%d failed: %s" % (i, r.stderr.decode()[-500:]))


def run_pair(c, a, transport, size, port):
    """busbw (GB/s) of the slower rank, or None after printing why the run failed."""
    common = "--transport %s --port %d --sizes %d --iters %d --warmup %d --timeout-ms 60000" % (
        transport, port, size, a.iters, a.warmup)
    if transport == "gloo-ibverbs":
        # rxe0's GID 1 is its IPv4-mapped RoCE v2 GID (tests/vm/README.md).
        common += " --hca rxe0 --ib-port 1 --gid-index 1"
    # The session token travels on ssh's stdin into the rank's environment, never on a command line.
    token = secrets.token_hex(12)
    procs = []
    for i in (0, 1):
        cmd = "read -r FABKIT_TOKEN && export FABKIT_TOKEN && exec %s %s --rank %d --local %s --peer %s" % (
            RANK, common, i, c.addr(i), c.addr(0))
        procs.append(subprocess.Popen(c.ssh_argv(i, cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
        procs[-1].stdin.write(token + "\n")
        procs[-1].stdin.close()
    runs = []
    for p in procs:
        out = p.stdout.read()
        err = p.stderr.read()
        p.wait(timeout=600)
        try:
            runs.append(json.loads(out))
        except ValueError:
            print("%s %d B: no JSON from a rank (exit %d): %s" % (transport, size, p.returncode, err[-500:]),
                  file=sys.stderr)
            return None
    for r in runs:
        if r["status"] != "ok" or not all(s["correct"] for s in r["sizes"]):
            print("%s %d B: %s %s" % (transport, size, r["status"], r["reason"]), file=sys.stderr)
            return None
    return min(r["sizes"][0]["busbw_gbps"] for r in runs)


def run_ib_write_bw(c, a, port):
    """perftest's bidirectional RDMA write bandwidth on the same rxe link, per direction in GB/s
    (the unit of an all-reduce's busbw: for 2 ranks, the bytes each direction carries per second),
    or None after printing why it failed. The RDMA wire ceiling the all-reduce is bounded by."""
    cmd = "ib_write_bw -d rxe0 -i 1 -x 1 -s %d -n %d -b -F -p %d" % (
        a.perftest_bytes, a.perftest_iters, port)
    try:
        # With -b perftest reports the sum of both directions.
        return perftest.parse_bw(perftest.run(c, cmd, cmd)) / 2 / 8
    except (RuntimeError, ValueError) as e:
        print("ib_write_bw: %s" % e, file=sys.stderr)
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="build directory (release/fabcheck, bench/allreduce/fabkit-allreduce-rank)")
    ap.add_argument("--image", help="VM image directory (default BUILD/vm, built when missing or stale)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default="65536,1048576,4194304", help="bytes, comma separated")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--contenders", default=",".join(CONTENDERS),
                    help="a comma list from %s; gloo-ibverbs first (the ratios are against it)" % ",".join(CONTENDERS))
    ap.add_argument("--perftest-bytes", type=int, default=65536, help="ib_write_bw -s (its row; 0 = leave it out)")
    ap.add_argument("--perftest-iters", type=int, default=200, help="ib_write_bw -n")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    fabcheck = os.path.join(a.build, "release", "fabcheck")
    tool = os.path.join(a.build, "bench", "allreduce", "fabkit-allreduce-rank")
    for f in (fabcheck, tool):
        if not os.access(f, os.X_OK):
            sys.exit("vm_rdma_bench.py: %s not built (ninja -C BUILD fabcheck_release fabkit-allreduce-rank)" % f)
    if os.geteuid() != 0:
        sys.exit("vm_rdma_bench.py: needs root (the VMs' namespace and taps)")
    try:
        sizes = [int(s) for s in a.sizes.split(",")]
    except ValueError:
        sys.exit("vm_rdma_bench.py: --sizes %r is not a comma-separated list of byte counts" % a.sizes)
    contenders = a.contenders.split(",")
    if contenders[0] != "gloo-ibverbs" or any(t not in CONTENDERS for t in contenders):
        sys.exit("vm_rdma_bench.py: --contenders %r: gloo-ibverbs first, then any of %s" % (a.contenders, CONTENDERS[1:]))
    if any(s < 4 for s in sizes):
        sys.exit("vm_rdma_bench.py: every size must be at least 4 bytes (one float32)")
    image = a.image or os.path.join(a.build, "vm")
    try:
        build_image(SRC, image, fabcheck)
    except Skip as e:
        sys.exit("vm_rdma_bench.py: cannot build the VM image: %s" % e)
    bw = {(t, s): [] for t in contenders for s in sizes}
    wire = []  # ib_write_bw per round
    with tempfile.TemporaryDirectory() as d, VmCluster(image, n=2) as c:
        stripped = os.path.join(d, "fabkit-allreduce-rank")
        shutil.copy(tool, stripped)
        subprocess.run(["strip", stripped], check=True)
        for i in (0, 1):
            ship(c, i, stripped)
        port = 29500
        for rnd in range(a.rounds):
            for s in sizes:
                k = rnd % len(contenders)
                for t in contenders[k:] + contenders[:k]:
                    bw[(t, s)].append(run_pair(c, a, t, s, port))
                    print("  %s %s: %s GB/s" % (LABEL[t], fmt_size(s), bw[(t, s)][-1]), file=sys.stderr)
                    port = port + 1 if port < 60000 else 20000
            if a.perftest_bytes:
                wire.append(run_ib_write_bw(c, a, 18515 + rnd))
                print("  ib_write_bw -b %s: %s GB/s per direction" % (fmt_size(a.perftest_bytes), wire[-1]),
                      file=sys.stderr)
            print("round %d/%d done, load average %.2f" % (rnd + 1, a.rounds, os.getloadavg()[0]), file=sys.stderr)
        accel = c.accel

    def med(xs):
        xs = [x for x in xs if x]
        return statistics.median(xs) if xs else float("nan")

    def ratios(num, den, s):
        return [x / y for x, y in zip(bw[(num, s)], bw[(den, s)]) if x and y]

    others = contenders[1:]
    head = (["size"] + ["%s GB/s" % LABEL[t] for t in contenders] +
            ["ibverbs/%s" % LABEL[t] for t in others])
    rows = [[fmt_size(s)] + ["%.4f" % med(bw[(t, s)]) for t in contenders] +
            ["%.3f" % med(ratios("gloo-ibverbs", t, s)) for t in others] for s in sizes]
    print("two soft-RoCE VMs (accelerator %s), %d rounds, %d timed iterations per run; per size the median "
          "busbw (GB/s, slower rank) and the median of per-round ratios" % (accel.upper(), a.rounds, a.iters))
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        w = max(len(h) for h in head) + 2
        print("".join(h.rjust(w) for h in head))
        for r in rows:
            print("".join(x.rjust(w) for x in r))
    if a.perftest_bytes:
        print("RDMA wire ceiling on the same link: ib_write_bw -b -s %d -n %d, per direction %.4f GB/s "
              "(median of %d rounds); the all-reduce's busbw is the same quantity"
              % (a.perftest_bytes, a.perftest_iters, med(wire), len(wire)))
    failed = sum(1 for v in bw.values() for x in v if x is None) + sum(1 for x in wire if x is None)
    if failed:
        print("%d run(s) failed (see above)" % failed, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
