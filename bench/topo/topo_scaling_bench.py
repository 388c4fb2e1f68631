"""How `fabcheck topo` scales with the number of <pci> elements (issue #19: quadratic before).

For 2.5k, 5k, 10k and 60k elements (tests/support/wide_topology.py) it times `fabcheck topo FILE
--json` and, alternating with it, a linear reference: Python's expat-based ElementTree reading
the same file. It prints the median of each and their ratio: a ratio that stays flat as the file
grows means fabcheck is linear; one that grows with the size means it is not.

    topo_scaling_bench.py /path/to/fabcheck [--runs 3] [--sizes 2500,5000,10000,60000]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "support"))
from wide_topology import wide_topology  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fabcheck")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sizes", default="2500,5000,10000,60000")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per fabcheck run")
    a = ap.parse_args()
    print("%8s %9s %12s %12s %8s %14s" % ("elements", "MB", "fabcheck_s", "reference_s", "ratio",
                                          "fabcheck_us/el"))
    for n in [int(s) for s in a.sizes.split(",")]:
        with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
            f.write(wide_topology(n))
            f.flush()
            ours, ref = [], []

            def run_fabcheck():
                r = subprocess.run([a.fabcheck, "topo", f.name, "--json"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, timeout=a.timeout)
                if r.returncode != 0:
                    sys.exit("fabcheck topo failed: " + r.stderr.decode(errors="replace")[-500:])

            for _ in range(a.runs):  # alternate: this machine is noisy
                ours.append(timed(run_fabcheck))
                ref.append(timed(lambda: ET.parse(f.name)))
            o, r = statistics.median(ours), statistics.median(ref)
            print("%8d %9.1f %12.3f %12.3f %8.1f %14.1f" % (n, os.path.getsize(f.name) / 1e6, o, r,
                                                            o / r, o / n * 1e6), flush=True)


if __name__ == "__main__":
    main()
