#!/usr/bin/env python3
"""The RoCE QoS gather on this kernel's real interfaces: a veth pair in a network namespace the
test creates (198.18.0.0/15 addresses, unique names, torn down in all cases). veth has no DCB
operations, so RTM_GETDCB must come back as "not_supported" (EOPNOTSUPP), not an error or a crash;
its ETH_SS_STATS counters are real: the names and values read must be those `ethtool -S` prints
(veth's peer_ifindex must be the peer's ifindex), read twice the asked interval apart. A name that
does not exist is "no_device".
usage: roce_qos_netns_test.py ROCE_QOS_READ"""
import json
import os
import random
import re
import shutil
import subprocess
import sys

READ = sys.argv[1]
TAG = "fq%05d%02d" % (os.getpid() % 100000, random.randrange(100))  # <= 15 chars with suffixes
NS = TAG + "n"
A, B = TAG + "a", TAG + "b"
NET = "198.18.%d." % (os.getpid() % 200 + 40)


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def nsenter(*argv, timeout=30):
    return subprocess.run(["nsenter", "--net=/var/run/netns/" + NS, *argv], capture_output=True,
                          text=True, timeout=timeout)


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root to create a network namespace")
        return 0
    ip("netns", "add", NS)
    try:
        ip("-n", NS, "link", "add", A, "type", "veth", "peer", "name", B)
        ip("-n", NS, "addr", "add", NET + "1/24", "dev", A)
        ip("-n", NS, "addr", "add", NET + "2/24", "dev", B)
        for d in (A, B, "lo"):
            ip("-n", NS, "link", "set", d, "up")
        r = nsenter(READ, "600", A, B, "nosuchdev0")
        if r.returncode != 0:
            fail("roce_qos_read exited %d: %s" % (r.returncode, r.stderr))
        facts = json.loads(r.stdout)
        ports = {p["netdev"]: p for p in facts["ports"]}
        for d in (A, B):
            dcb = ports[d]["dcb"]
            if dcb["status"] != "not_supported" or "errno 95" not in (dcb["detail"] or ""):
                fail("%s: DCB should be not_supported (EOPNOTSUPP), got %s" % (d, dcb))
            eth = ports[d]["ethtool"]
            if eth["status"] != "ok" or eth["stats_total"] <= 0:
                fail("%s: ethtool statistics should be readable on veth, got %s" % (d, eth))
        if ports["nosuchdev0"]["dcb"]["status"] != "no_device":
            fail("a missing netdev should be no_device: %s" % ports["nosuchdev0"]["dcb"])
        if ports["nosuchdev0"]["ethtool"]["status"] != "no_device":
            fail("a missing netdev's statistics should be no_device: %s" % ports["nosuchdev0"]["ethtool"])
        if facts["counter_interval_ms"] < 600:
            fail("the reads should be >= 600 ms apart: %s" % facts["counter_interval_ms"])
        # veth's peer_ifindex is the other end's ifindex: a value the ioctl must carry exactly.
        # (ip -j, not /sys: under nsenter /sys still shows the root namespace's netdevs.)
        link_b = subprocess.run(["ip", "-n", NS, "-j", "link", "show", B], capture_output=True,
                                text=True, check=True, timeout=10).stdout
        ifindex_b = json.loads(link_b)[0]["ifindex"]
        if facts["raw_ethtool"][A].get("peer_ifindex") != ifindex_b:
            fail("%s peer_ifindex read %s, the peer %s has ifindex %d" %
                 (A, facts["raw_ethtool"][A].get("peer_ifindex"), B, ifindex_b))
        # The same counters ethtool(8) prints, by the same ioctl.
        if shutil.which("ethtool"):
            out = nsenter("ethtool", "-S", A).stdout
            printed = {n: int(v) for n, v in re.findall(r"^\s+([^:]+):\s+(\d+)$", out, re.M)}
            if printed != facts["raw_ethtool"][A]:
                fail("ethtool -S %s printed %s, the gather read %s" % (A, printed, facts["raw_ethtool"][A]))
            if len(printed) != ports[A]["ethtool"]["stats_total"]:
                fail("ethtool -S lists %d counters, the gather counted %d" %
                     (len(printed), ports[A]["ethtool"]["stats_total"]))
            for n in ports[A]["ethtool"]["counters"]:
                if n not in printed:
                    fail("kept counter %s is not in ethtool -S %s" % (n, A))
        else:
            print("note: ethtool(8) not installed; counter names not cross-checked")
        print("PASS: DCB not_supported on veth, %d ethtool counters read twice %d ms apart" %
              (ports[A]["ethtool"]["stats_total"], facts["counter_interval_ms"]))
        return 0
    finally:
        subprocess.run(["ip", "netns", "del", NS], capture_output=True, timeout=10)


if __name__ == "__main__":
    sys.exit(main())
