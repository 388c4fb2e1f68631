#!/usr/bin/env python3
"""One real `fabcheck cluster --json` run over network-namespace hosts (as
tests/integration/cluster/test_cluster.py runs them: --launcher 'ip netns exec {host}', the
controller in its own namespace), reduced to the fields the fabric simulator reads
(slurm/sim/measured.h): the hosts, plan, schedule, the matrix pairs' figures and times, the search
rounds and the findings. The reduced report is still a cluster report, so
`fabkit-fabric-sim --measured OUT` reads it like a full one.

Run (root): measure_netns.py FABCHECK OUT [--hosts 8] [--pairs ring] [--shape 0,2] [-- EXTRA...]
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration", "netns"))
import netns  # noqa: E402

# test_cluster.py's FAST options plus the search's fraction of its 8-node case.
FAST = ["--bandwidth-ms", "300", "--pings", "100", "--timeout-ms", "3000", "--node-timeout-ms",
        "30000", "--slow-fraction", "0.2"]


def reduce(doc):
    c = doc["cluster"]
    keep_pair = ("a", "b", "round", "ok", "gbit_s", "state", "expected_gbit_s", "elapsed_ms",
                 "retested", "retest_gbit_s", "source")
    out = {k: doc[k] for k in ("schema_version", "kind", "generated_at", "findings") if k in doc}
    out["cluster"] = {
        "hosts": c["hosts"], "plan": c["plan"], "max_parallel": c["max_parallel"],
        "schedule": c["schedule"],
        "matrix": {"reference_gbit_s": c["matrix"].get("reference_gbit_s"),
                   "slow_fraction": c["matrix"].get("slow_fraction"),
                   "pairs": [{k: p.get(k) for k in keep_pair} for p in c["matrix"]["pairs"]]},
        "search": c.get("search"),
    }
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fabcheck")
    ap.add_argument("out")
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--pairs", default="ring")
    ap.add_argument("--shape", default="", help="i,j: the link hi<->hj shaped both ways (tbf)")
    ap.add_argument("--rate", default="20mbit")
    a, extra = ap.parse_known_args()
    a.extra = [x for x in extra if x != "--"]
    if not netns.have_root_and_netns():
        print("needs root and network namespaces", file=sys.stderr)
        return 77
    with netns.NetnsWorld(hosts=a.hosts, decoys=False, controller=True) as w:
        if a.shape:
            i, j = (int(x) for x in a.shape.split(","))
            netns.shape_to_peer(w.hosts[i], "fab0", w.addr(j), a.rate)
            netns.shape_to_peer(w.hosts[j], "fab0", w.addr(i), a.rate)
        argv = ["ip", "netns", "exec", w.ctl, a.fabcheck, "cluster", *w.hosts, "--launcher",
                "ip netns exec {host}", "--json", "--no-progress", "--pairs", a.pairs, *FAST,
                *a.extra]
        t0 = time.monotonic()
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=1800)
        elapsed = time.monotonic() - t0
        doc = json.loads(r.stdout)
        # Host names carry the world's random tag; h<i> is what the README and the tables name.
        names = {h: "h%d" % i for i, h in enumerate(w.hosts)}
        text = json.dumps(reduce(doc), indent=1)
        for h, short in sorted(names.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(h, short)
        with open(a.out, "w") as f:
            f.write(text + "\n")
        load = open("/proc/loadavg").read().split()[:3]
        print("exit %d, %.1f s wall, load average %s, argv: %s" % (
            r.returncode, elapsed, " ".join(load), " ".join(argv[4:])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
