#!/usr/bin/python3
"""`fabcheck cluster` over N real network-namespace hosts with one link shaped to 100 Mbit/s:
wall time, per-pair run times, and whether the bad link was named with no healthy node or link
blamed. The per-pair times feed the fabric simulator; the verdicts are the issue-43 goal ("at 64
real netns hosts, right in 10 of 10 runs").

    sudo bench/cluster/netns_scale.py build-dev/cli/fabcheck --hosts 8 16 32
    sudo bench/cluster/netns_scale.py build-dev/cli/fabcheck --hosts 64 --runs 10

Hosts: tests/integration/netns/netns.py NetnsWorld (one bridge, one interface per host, the
controller in a namespace of its own, 198.18.1.0/24; every namespace is deleted after each run).
The bad link is shaped both ways with tbf as tests/integration/cluster/test_cluster.py's
shape_link. --link neighbour (default) shapes h0<->h1, a pair every plan measures; --link far
shapes h0<->h(N/2), which the ring plan never measures: give --pairs ring --search then, and the
bad-link search has to find it.

One line per run: `run K/R N=.. wall .. s load .. flaky .. verdict right|WRONG (..)`; right =
the shaped link named (cluster.link_slow or cluster.link_search_found) and no node or other link
blamed (a node_*, link_slow, link_failed or search finding naming anything else). Links flagged
once and healthy when re-tested (cluster.link_flaky, a warning) are counted, not blamed. --save writes one
small JSON per N (the last run's) under bench/cluster/testdata/: the command, the load average
before and after, the wall time, every pair run's elapsed_ms and figure, the verdict.
Needs root (namespaces); exit 77 when namespaces cannot be made, 1 when any run was wrong.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration", "netns"))
import netns  # noqa: E402

# Findings that put blame on a node or a link (docs/findings/cluster.md); any of them naming
# something other than the shaped link is a false blame.
BLAME = {"cluster.node_slow", "cluster.node_unreachable", "cluster.node_check_failed",
         "cluster.link_slow", "cluster.link_failed", "cluster.link_search_found",
         "cluster.no_measurement"}
NAMES_THE_LINK = {"cluster.link_slow", "cluster.link_search_found"}


def names_link(subject, a, b):
    parts = set(subject.replace("<->", " ").split())
    return parts == {a, b}


def verdict(doc, bad_a, bad_b):
    """(right, why): right when a finding names the shaped link and nothing else is blamed."""
    findings = doc.get("findings", [])
    named = [f for f in findings if f["code"] in NAMES_THE_LINK and names_link(f["subject"], bad_a, bad_b)]
    wrong = [f for f in findings if f["code"] in BLAME and f not in named]
    if named and not wrong:
        return True, "named %s (%s)" % (named[0]["subject"], ", ".join(sorted({f["code"] for f in named})))
    why = []
    if not named:
        why.append("the shaped link %s<->%s was not named" % (bad_a, bad_b))
    for f in wrong:
        why.append("blamed %s: %s" % (f["code"], f["subject"]))
    return False, "; ".join(why)


PAIR_COLUMNS = ["a", "b", "round", "gbit_s", "state", "elapsed_ms", "retest_gbit_s"]


def compact_pairs(pairs, idx):
    """The pair runs as rows under one header (a 64-host run has 2016 of them)."""
    rows = [[idx.get(p["a"], p["a"]), idx.get(p["b"], p["b"]), p["round"],
             None if p["gbit_s"] is None else round(p["gbit_s"], 4), p["state"], round(p["elapsed_ms"], 1),
             None if p.get("retest_gbit_s") is None else round(p["retest_gbit_s"], 4)]
            for p in pairs]
    return {"columns": PAIR_COLUMNS, "rows": rows}


def one_run(fabcheck, n, link, extra, timeout_s):
    with netns.NetnsWorld(hosts=n, decoys=False, controller=True) as w:
        bad = (0, 1) if link == "neighbour" else (0, n // 2)
        netns.shape_to_peer(w.hosts[bad[0]], "fab0", w.addr(bad[1]), "100mbit")
        netns.shape_to_peer(w.hosts[bad[1]], "fab0", w.addr(bad[0]), "100mbit")
        argv = [fabcheck, "cluster", *w.hosts, "--launcher", "ip netns exec {host}", "--json",
                "--no-progress", *extra]
        load0 = os.getloadavg()
        t0 = time.monotonic()
        r = subprocess.run(["ip", "netns", "exec", w.ctl, *argv], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=timeout_s)
        wall = time.monotonic() - t0
        load1 = os.getloadavg()
        try:
            doc = json.loads(r.stdout)
        except ValueError:
            return {"n": n, "wall_s": wall, "right": False,
                    "why": "not JSON (exit %d): %s" % (r.returncode, r.stderr[-400:]),
                    "load_before": load0, "load_after": load1}
        a, b = w.hosts[bad[0]], w.hosts[bad[1]]
        right, why = verdict(doc, a, b)
        if doc.get("kind") != "cluster":
            right, why = False, "exit %d: %s" % (r.returncode, json.dumps(doc)[:400])
        c = doc.get("cluster", {})
        pairs = c.get("matrix", {}).get("pairs", [])
        search = c.get("search") or {}
        # Host names carry the run's random tag: the saved record uses the index (h0, h1, ...).
        idx = {h: "h%d" % i for i, h in enumerate(w.hosts)}
        return {
            "n": n,
            "command": ("fabcheck cluster h0..h%d --launcher 'ip netns exec {host}' --json " % (n - 1)
                        + " ".join(extra)).strip(),
            "shaped_link": "h%d<->h%d" % bad,
            "shaped_rate": "100mbit (tbf, both ways)",
            "exit": r.returncode,
            "wall_s": round(wall, 2),
            "load_before": [round(x, 2) for x in load0],
            "load_after": [round(x, 2) for x in load1],
            "cores": os.cpu_count(),
            "max_parallel": c.get("max_parallel"),
            "schedule": {k: c.get("schedule", {}).get(k) for k in
                         ("rounds", "waves", "pair_runs", "nodes_ms", "pairs_ms", "retest_ms")},
            "pair_elapsed_ms": [round(p["elapsed_ms"], 1) for p in pairs],
            "pairs": compact_pairs(pairs, idx),
            "search": {k: search.get(k) for k in ("ran", "outcome", "rounds_used", "group_tests",
                                                   "elapsed_ms")} if search else None,
            "right": right,
            "why": why.replace(w.tag + "-", ""),
            # Warnings, not blame: links flagged by one noisy measurement and healthy when re-tested.
            "flaky_warnings": sum(1 for f in doc.get("findings", []) if f["code"] == "cluster.link_flaky"),
            "flaky_links": sum(1 for p in pairs if p["state"] == "flaky"),
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="after --: more fabcheck cluster flags")
    ap.add_argument("fabcheck")
    ap.add_argument("--hosts", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--link", choices=["neighbour", "far"], default="neighbour")
    ap.add_argument("--save", action="store_true", help="write bench/cluster/testdata/netns-N.json")
    ap.add_argument("--tag", default="", help="with --save: netns-N-TAG.json (runs with other flags)")
    ap.add_argument("--timeout-s", type=int, default=3600)
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    extra = argv[cut + 1:]  # after --: more fabcheck cluster flags
    ok, why = netns.have_root_and_netns()
    if not ok:
        print("skipped: " + why)
        return 77
    fabcheck = os.path.abspath(a.fabcheck)
    wrong = 0
    for n in a.hosts:
        results = []
        for k in range(a.runs):
            res = one_run(fabcheck, n, a.link, extra, a.timeout_s)
            results.append(res)
            wrong += not res["right"]
            el = res.get("pair_elapsed_ms") or [0]
            print("run %d/%d N=%d wall %.1f s load %.2f->%.2f pair runs %d (median %.0f ms, max %.0f ms) "
                  "flaky (healthy on re-test) %d verdict %s (%s)" % (
                      k + 1, a.runs, n, res["wall_s"], res["load_before"][0], res["load_after"][0],
                      len(res.get("pair_elapsed_ms", [])), statistics.median(el), max(el),
                      res.get("flaky_links", 0), "right" if res["right"] else "WRONG", res["why"]),
                  flush=True)
        if a.runs > 1:
            print("N=%d: right in %d of %d runs; wall %s s" % (
                n, sum(r["right"] for r in results), a.runs,
                " ".join("%.0f" % r["wall_s"] for r in results)), flush=True)
        if a.save:
            out = os.path.join(HERE, "testdata", "netns-%d%s%s.json" % (
                n, "" if a.link == "neighbour" else "-far", "-" + a.tag if a.tag else ""))
            os.makedirs(os.path.dirname(out), exist_ok=True)
            rec = dict(results[-1])
            rec.pop("pair_elapsed_ms", None)  # the pairs' rows hold them
            rec["runs"] = [{"wall_s": r["wall_s"], "right": r["right"], "load_before": r["load_before"]}
                           for r in results]
            with open(out + ".tmp", "w") as f:
                rows = rec.pop("pairs")
                text = json.dumps(rec, indent=1)
                # One line per pair run: small, and diffs stay readable.
                text = text[:-2] + ',\n "pairs": {"columns": %s, "rows": [\n  %s\n ]}\n}\n' % (
                    json.dumps(rows["columns"]), ",\n  ".join(json.dumps(r) for r in rows["rows"]))
                f.write(text)
            os.replace(out + ".tmp", out)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
