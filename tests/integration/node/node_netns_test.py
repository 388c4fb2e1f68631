#!/usr/bin/env python3
"""A namespace host with two veth interfaces: the "right" one on the peer's 198.18.x subnet and a
decoy created first (so NCCL's scan order meets it first). fabcheck must recommend the right one
and warn when NCCL_SOCKET_IFNAME points at the decoy. Everything is torn down in all cases.
usage: node_netns_test.py FABCHECK"""
import os
import random
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fabcheck_run import check, clean_env, parse, run  # noqa: E402

FABCHECK = sys.argv[1]
TAG = "fk%05d%02d" % (os.getpid() % 100000, random.randrange(100))  # <= 9 chars: IFNAMSIZ
HOST, PEER = TAG + "h", TAG + "p"
RIGHT, DECOY = TAG + "r", TAG + "d"
PEER_ADDR = "198.18.%d.2" % (os.getpid() % 250 + 1)
RIGHT_ADDR = PEER_ADDR[:-1] + "1/24"


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


def setup():
    ip("netns", "add", HOST)
    ip("netns", "add", PEER)
    # Decoy first: lower ifindex, so getifaddrs (and NCCL) list it before the right one.
    ip("link", "add", DECOY, "netns", HOST, "type", "veth", "peer", "name", DECOY + "x",
       "netns", PEER)
    ip("link", "add", RIGHT, "netns", HOST, "type", "veth", "peer", "name", RIGHT + "x",
       "netns", PEER)
    ip("-n", HOST, "addr", "add", "198.19.77.1/24", "dev", DECOY)
    ip("-n", HOST, "addr", "add", RIGHT_ADDR, "dev", RIGHT)
    ip("-n", PEER, "addr", "add", "198.19.77.2/24", "dev", DECOY + "x")
    ip("-n", PEER, "addr", "add", PEER_ADDR + "/24", "dev", RIGHT + "x")
    for ns, devs in ((HOST, (DECOY, RIGHT, "lo")), (PEER, (DECOY + "x", RIGHT + "x", "lo"))):
        for d in devs:
            ip("-n", ns, "link", "set", d, "up")


def teardown():
    for ns in (HOST, PEER):  # deleting a namespace deletes its veth ends
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


def node(extra_env=None, *args):
    p = run([FABCHECK, "node", "--json", "--peer", PEER_ADDR, *args],
            env=clean_env(extra_env), prefix=["ip", "netns", "exec", HOST])
    check(p.returncode in (0, 1), f"exit {p.returncode}: {p.stderr}")
    return parse(p.stdout)[1]


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))  # ctest timeout: still tear down
    try:
        setup()
        doc = node()
        net = doc["net"]
        names = sorted(i["name"] for i in net["interfaces"])
        check(names == sorted([DECOY, RIGHT, "lo"]), f"interfaces {names}")
        check(net["recommended"]["name"] == RIGHT, f"recommended {net['recommended']}")
        check(net["peer"]["on_subnet_of"] == [RIGHT], f"peer {net['peer']}")
        check(net["peer"]["route_interface"] == RIGHT, f"route {net['peer']}")
        check(net["nccl_pick"]["name"] == DECOY, f"NCCL's own pick {net['nccl_pick']}")

        doc = node({"NCCL_SOCKET_IFNAME": DECOY})
        differs = [f for f in doc["findings"] if f["code"] == "net.nccl_pick_differs"]
        check(len(differs) == 1 and differs[0]["severity"] == "warn", f"findings {doc['findings']}")
        check(f"NCCL_SOCKET_IFNAME=={RIGHT}" in differs[0]["fix"] and
              f"GLOO_SOCKET_IFNAME={RIGHT}" in differs[0]["fix"], f"fix {differs[0]['fix']}")

        doc = node({"NCCL_SOCKET_IFNAME": "=" + RIGHT})
        check(doc["net"]["nccl_pick"]["name"] == RIGHT, "pinned pick")
        check(not any(f["code"] == "net.nccl_pick_differs" for f in doc["findings"]),
              "no differs warning once pinned")

        doc = node({"NCCL_SOCKET_IFNAME": "eth"})
        check(any(f["code"] == "net.ifname_matches_nothing" and f["severity"] == "fail"
                  for f in doc["findings"]), "eth matches nothing here")
        print("ok netns pick", RIGHT, "over", DECOY)
    finally:
        teardown()
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    check(HOST not in left and PEER not in left, f"namespaces left behind: {left}")


main()
