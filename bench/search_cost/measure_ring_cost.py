#!/usr/bin/python3
"""The figures of the bad-link search's cost model (slurm/search_cost.h, RingCostModel) measured
between network-namespace hosts on this machine: fabcheck pair's N-host controller (the group test
of `fabcheck cluster`'s search) runs a ring all-reduce of fabkit-socket over n hosts at a sweep of
sizes, and the alpha-beta model T(S) = 2(n-1)(alpha + S/(n B)) is fitted (least squares over the
sizes) to each ring's fastest timed call. The group's own set-up (agent launch, hello, connect,
facts, peers) and the reachability probes are read from its step records.

  sudo /usr/bin/python3 bench/search_cost/measure_ring_cost.py --fabcheck build-dev/cli/fabcheck \
       [--hosts 4,8] [--sizes 8K,64K,512K,4M] [--repeat 3]
"""
import argparse, json, os, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration", "netns"))
import netns  # noqa: E402


def parse_size(t):
    t = t.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(t[:-1]) * mult[t[-1]] if t[-1] in mult else int(t)


def fit(n, rows):
    # T/(2(n-1)) = alpha + (S/n) * (1/B): a line in x = S/n.
    xs = [s / n for s, _ in rows]
    ys = [t / (2 * (n - 1)) for _, t in rows]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, 1.0 / slope  # alpha (s), B (bytes/s)


def run(fabcheck, n, sizes, repeat):
    out = []
    with netns.NetnsWorld(hosts=n, decoys=False, controller=True) as w:
        for _ in range(repeat):
            argv = ["ip", "netns", "exec", w.ctl, fabcheck, "pair", *w.hosts, "--launcher",
                    "ip netns exec {host}", "--json", "--transports", "fabkit-socket", "--sizes",
                    ",".join(str(s) for s in sizes), "--iters", "5", "--warmup-iters", "1",
                    "--pings", "20", "--streams", "1", "--bandwidth-ms", "50", "--timeout-ms", "10000"]
            r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
            doc = json.loads(r.stdout)
            g = next(s for s in doc["sections"] if s["name"] == "pair_group")["data"] \
                if isinstance(doc.get("sections"), list) else doc["pair_group"]
            steps = g["steps"]
            setup = sum(s["elapsed_ms"] for s in steps if s["step"] in ("launch", "hello", "connect", "facts", "peers"))
            reach = sum(s["elapsed_ms"] for s in steps if s["step"] == "reachability")
            ring = [s["elapsed_ms"] for s in steps if s["step"].startswith("allreduce:")]
            t = g["rings"][0]["transports"][0]
            rows = [(s["bytes"], (s.get("best_time_us") or s["time_us"]) * 1e-6) for s in t["sizes"]]
            alpha, B = fit(n, rows)
            out.append({"n": n, "alpha_us": alpha * 1e6, "B_GBps": B / 1e9, "setup_ms": setup,
                        "reach_ms_per_pair": reach / n, "ring_run_ms": ring[0] if ring else None,
                        "rows": rows})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fabcheck", required=True)
    ap.add_argument("--hosts", default="4,8")
    ap.add_argument("--sizes", default="8K,64K,512K,4M")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json-out", help="every run's figures and (bytes, seconds) rows")
    a = ap.parse_args()
    sizes = [parse_size(s) for s in a.sizes.split(",")]
    res = []
    for n in (int(x) for x in a.hosts.split(",")):
        res += run(os.path.abspath(a.fabcheck), n, sizes, a.repeat)
    for r in res:
        print("n=%d alpha=%.1f us B=%.3f GB/s setup=%.0f ms reachability=%.0f ms/pair ring run=%s ms"
              % (r["n"], r["alpha_us"], r["B_GBps"], r["setup_ms"], r["reach_ms_per_pair"], r["ring_run_ms"]))
    for n in sorted({r["n"] for r in res}):
        rs = [r for r in res if r["n"] == n]
        print("median n=%d: alpha %.1f us, B %.3f GB/s, set-up %.0f ms, reachability %.0f ms per pair, "
              "ring run (connect + %d sizes x 6 calls) %.0f ms"
              % (n, statistics.median(r["alpha_us"] for r in rs), statistics.median(r["B_GBps"] for r in rs),
                 statistics.median(r["setup_ms"] for r in rs), statistics.median(r["reach_ms_per_pair"] for r in rs),
                 len(sizes), statistics.median(r["ring_run_ms"] for r in rs)))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
