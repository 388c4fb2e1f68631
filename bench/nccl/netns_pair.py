#!/usr/bin/env python3
"""Two ranks of an NCCL all-reduce over NCCL's socket transport between two network-namespace
hosts on this machine, sharing its GPU: distinct NCCL_HOSTID per host (NCCL rejects two ranks on
one GPU of one host, "Duplicate GPU detected"), P2P and SHM off. Hosts come from
tests/integration/netns (a bridge with fab0 per host, a controller namespace). Runs it twice:
  1. the bare runner (nccl_child_driver.py), each rank under `ip netns exec HOST`;
  2. the product path: `fabcheck pair h0 h1` from the controller namespace, agents launched with
     'ip netns exec {host} env NCCL_HOSTID={host} NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1'.
Needs root and fabcheck + fabcheck-nccl-runner built; says why and exits 2 otherwise. Without a
GPU the bare runner is not run and `fabcheck pair` measures its other transports (NCCL's is
reported unavailable, with NCCL's reason): the namespaces and the pair path still get exercised.
Where FABKIT_BENCH_JSON names a file, the figures are also written there as JSON.
Exit: 0 every run that could run passed (on a GPU machine: both NCCL runs), 1 one failed, 2 cannot run.
usage: netns_pair.py [BUILD_DIR] [SIZES]"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "../../tests/integration/netns"))
import machine  # noqa: E402
import nccl_child_driver  # noqa: E402
import netns  # noqa: E402

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "../../build-notorch"))
sizes = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "1048576,16777216").split(",")]
runner = os.path.join(build, "cli/fabcheck-nccl-runner")
fabcheck = os.path.join(build, "cli/fabcheck")


def cannot(why):
    print(f"netns_pair: cannot run on this machine: {why}")
    sys.exit(2)


if not os.access(runner, os.X_OK):
    cannot(f"{runner} is not built (fabcheck built without NCCL?)")
gpus, why_no_gpu, answered = machine.nvidia_smi_list(timeout_s=30)
if not answered:
    cannot(why_no_gpu)
have_gpu = bool(gpus)
ok, why = netns.have_root_and_netns()
if not ok:
    cannot(why)
figures = {"gpu": have_gpu, "sizes": sizes, "bare_runner": None, "pair": None}


def save():
    """Written after each run, not once at the end: a caller that kills this script at its time
    cap (scripts/gpu-check) keeps what was measured before."""
    if os.environ.get("FABKIT_BENCH_JSON"):
        tmp = os.environ["FABKIT_BENCH_JSON"] + ".tmp"
        with open(tmp, "w") as f:
            json.dump(figures, f, indent=1)
        os.replace(tmp, os.environ["FABKIT_BENCH_JSON"])


def failed(why):
    print(f"netns_pair: {why}")
    save()
    sys.exit(1)


def bare_runner(w):
    print(f"== 1. bare runner: ranks in {w.hosts[0]} / {w.hosts[1]}, one GPU shared (device 0)")
    env = dict(os.environ, NCCL_P2P_DISABLE="1", NCCL_SHM_DISABLE="1", NCCL_NET="Socket",
               NCCL_IB_DISABLE="1", NCCL_SOCKET_IFNAME="=fab0", NCCL_DEBUG="INFO",
               NCCL_DEBUG_SUBSYS="INIT,NET")
    out = nccl_child_driver.run(runner, 2, sizes, iters=20, warmup=5, timeout_ms=60000,
                                prefixes=[f"ip netns exec {h}" for h in w.hosts],
                                rank_env=["NCCL_HOSTID=fabkit-netns-{rank}"], base_env=env)
    for r in out:
        print(f"rank {r['rank']}: {r['status']}: {r.get('reason', '')}")
        if r["status"] == "ok":
            for s in r["result"]["sizes"]:
                print(f"  {s['bytes']:>10} B  busbw {s['busbw_gbps']:.3f} GB/s  correct {s['correct']}")
        else:
            print("  log tail:\n    " + "\n    ".join(r["log_tail"][-15:]))
    figures["bare_runner"] = [{"rank": r["rank"], "status": r["status"], "reason": r.get("reason"),
                               "busbw_gbps": [s["busbw_gbps"] for s in r["result"]["sizes"]]
                               if r["status"] == "ok" else None} for r in out]
    save()
    return all(r["status"] == "ok" for r in out)


try:
    with netns.NetnsWorld(hosts=2, decoys=False, controller=True) as w:
        if have_gpu:
            bare_ok = bare_runner(w)
        else:
            print(f"== 1. bare runner: not run, no GPU here ({why_no_gpu})")
            bare_ok = True
        print(f"== 2. fabcheck pair {w.hosts[0]} {w.hosts[1]} (nccl-socket, fabkit-socket, raw-exchange)")
        launcher = "ip netns exec {host} env NCCL_HOSTID={host} NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"
        p = subprocess.run(["ip", "netns", "exec", w.ctl, fabcheck, "pair", *w.hosts, "--launcher", launcher,
                            "--transports", "nccl-socket,fabkit-socket,raw-exchange",
                            "--sizes", ",".join(map(str, sizes)), "--transport-timeout-ms", "120000", "--json"],
                           capture_output=True, text=True, timeout=600)
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            failed(f"fabcheck pair exit {p.returncode} without a JSON report:\n{p.stderr[-2000:]}")
        for t in doc["pair"]["transports"]:
            best = max((s["busbw_gbps"] for s in t.get("sizes", [])), default=0)
            print(f"  {t['transport']:<14} {t['status']:<12} max busbw {best:.3f} GB/s  {t.get('reason') or ''}")
        print(f"fabcheck pair exit {p.returncode}")
        figures["pair"] = [{"transport": t["transport"], "status": t["status"], "reason": t.get("reason"),
                            "max_busbw_gbps": max((s["busbw_gbps"] for s in t.get("sizes", [])), default=None)}
                           for t in doc["pair"]["transports"]]
        nccl = [t for t in doc["pair"]["transports"] if t["transport"] == "nccl-socket"]
        others = [t for t in doc["pair"]["transports"] if t["transport"] != "nccl-socket"]
        # Without a GPU NCCL cannot run; the other transports must still measure.
        pair_ok = all(t["status"] == "ok" for t in others) and (
            (bool(nccl) and nccl[0]["status"] == "ok") if have_gpu else True)
except netns.NetnsError as e:
    # The probe above tried every part the hosts need: a failure here is a real one, said plainly
    # (the namespaces made are removed on the way out).
    failed(f"the two hosts' network: {e}")
save()
sys.exit(0 if bare_ok and pair_ok else 1)
