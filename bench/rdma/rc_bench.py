#!/usr/bin/python3
"""fabcheck's RDMA RC test against perftest on the same soft-RoCE link, side by side in one boot
(issue #37): two qemu VMs with rdma_rxe over their eth0 (tests/vm), and per round each contender
once, in an order that rotates from round to round:
  - `fabcheck pair A B --transports none --rc-iters N --rc-size S --rc-lat-iters M`: RDMA WRITE
    bandwidth (the client's timing, S x N, 128 in flight) and one-way SEND latency (2 B x M);
  - `ib_write_bw -s S -n N` (perftest's default depth, 128) and
    `ib_write_lat -s 2 -n M` and `ib_send_lat -s 2 -n M` (t_typical: perftest's median one-way).
Reported: the median of each figure and the median of the per-round ratios (a ratio within one
round compares the contenders under the same noise). Goals: fabcheck's write bandwidth >= 0.9x
ib_write_bw's, its one-way latency <= 1.1x ib_write_lat's (and ib_send_lat's, the same operation).
The VM's accelerator (TCG here) is printed with the figures.

  sudo /usr/bin/python3 bench/rdma/rc_bench.py --build build [--rounds 5] [--iters 1000]
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "vm"))
sys.path.insert(0, HERE)
from vm_cluster import VmCluster, build_image  # noqa: E402
import perftest  # noqa: E402

BW_GOAL = 0.9
LAT_GOAL = 1.1


def fabcheck_rc(c, fabcheck, size, iters, lat_iters):
    r = c.controller([fabcheck, "pair", c.addr(0), c.addr(1), "--launcher", c.launcher,
                      "--agent-path", "/usr/bin/fabcheck", "--json", "--transports", "none",
                      "--pings", "5", "--bandwidth-ms", "100", "--timeout-ms", "20000",
                      "--rc-iters", str(iters), "--rc-size", str(size),
                      "--rc-lat-iters", str(lat_iters)], timeout=600)
    doc = json.loads(r.stdout)
    pr = doc["pair"]["rdma_rc"]["pairs"][0]
    if pr["status"] != "ok" or not pr["write_bw"][1].get("data_verified"):
        raise RuntimeError("fabcheck's RC test did not succeed: %s" % pr["reason"])
    return pr["bw_gbps"], pr["lat_us_median"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size", type=int, default=65536)
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--lat-iters", type=int, default=1000)
    a = ap.parse_args()
    root = os.path.abspath(os.path.join(HERE, "..", ".."))
    fabcheck = os.path.abspath(os.path.join(a.build, "release", "fabcheck"))
    image = os.path.abspath(os.path.join(a.build, "vm"))
    build_image(root, image, fabcheck)
    rows = []
    with VmCluster(image, n=2) as c:
        contenders = ["fabcheck", "ib_write_bw", "ib_write_lat", "ib_send_lat"]
        for rnd in range(a.rounds):
            order = contenders[rnd % len(contenders):] + contenders[:rnd % len(contenders)]
            got = {}
            for name in order:
                if name == "fabcheck":
                    got["bw"], got["lat"] = fabcheck_rc(c, fabcheck, a.size, a.iters, a.lat_iters)
                elif name == "ib_write_bw":
                    cmd = "ib_write_bw -x 1 -s %d -n %d" % (a.size, a.iters)
                    got["pt_bw"] = perftest.parse_bw(perftest.run(c, cmd, cmd))
                else:
                    cmd = "%s -x 1 -s 2 -n %d" % (name, a.lat_iters)
                    got[name] = perftest.parse_lat(perftest.run(c, cmd, cmd))
            rows.append(got)
            print("round %d (%s): fabcheck %.3f Gbit/s, %.1f us; ib_write_bw %.3f Gbit/s; "
                  "ib_write_lat %.1f us; ib_send_lat %.1f us"
                  % (rnd + 1, " ".join(order), got["bw"], got["lat"], got["pt_bw"],
                     got["ib_write_lat"], got["ib_send_lat"]), flush=True)
    med = lambda k: statistics.median(r[k] for r in rows)  # noqa: E731
    bw_ratio = statistics.median(r["bw"] / r["pt_bw"] for r in rows)
    lat_ratio = statistics.median(r["lat"] / r["ib_write_lat"] for r in rows)
    send_ratio = statistics.median(r["lat"] / r["ib_send_lat"] for r in rows)
    print("\nsoft-RoCE (rdma_rxe) between two qemu VMs, accel %s, %d rounds, %d B x %d writes, "
          "2 B x %d latency iterations" % (c.accel, a.rounds, a.size, a.iters, a.lat_iters))
    print("| figure | fabcheck | perftest | median ratio | goal |")
    print("|---|---|---|---|---|")
    print("| RC WRITE bandwidth (Gbit/s) | %.3f | %.3f (ib_write_bw) | %.2f | >= %.1f: %s |"
          % (med("bw"), med("pt_bw"), bw_ratio, BW_GOAL, "met" if bw_ratio >= BW_GOAL else "NOT met"))
    print("| one-way latency (us) | %.1f | %.1f (ib_write_lat) | %.2f | <= %.1f: %s |"
          % (med("lat"), med("ib_write_lat"), lat_ratio, LAT_GOAL,
             "met" if lat_ratio <= LAT_GOAL else "NOT met"))
    print("| one-way latency (us) | %.1f | %.1f (ib_send_lat) | %.2f | <= %.1f: %s |"
          % (med("lat"), med("ib_send_lat"), send_ratio, LAT_GOAL,
             "met" if send_ratio <= LAT_GOAL else "NOT met"))


if __name__ == "__main__":
    main()
