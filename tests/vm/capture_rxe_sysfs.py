#!/usr/bin/env python3
"""Records the real sysfs of soft-RoCE devices as ttar fixtures (tests/fixtures/rdma/README.md):
one VM booted as test_node_rxe.py boots it (rxe0 over eth0; namespaces A and B joined by a veth
pair, rxe1 over va in A, rxe2 over vb in B), and /sys/class/infiniband plus the netdevs'
/sys/class/net entries read in the initial namespace and in B.

    sudo tests/vm/capture_rxe_sysfs.py --image build/vm OUTDIR

Writes OUTDIR/sysfs_rxe_initial_netns.ttar and OUTDIR/sysfs_rxe_netns_b.ttar. The data is not
edited; what is left out is said in each file's first line: GID slots past the last used one but
two (rxe has 1024, almost all empty), pkeys past 0 (rxe has 64), and the files the kernel refuses
to read (gid_attrs of empty slots answer EINVAL, as they do on the node).
"""
import argparse
import base64
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vm_cluster import VmCluster  # noqa: E402
from test_node_rxe import SETUP  # noqa: E402

# Every readable file of each RDMA device (its own files, ports/, hw_counters/), the names under
# device/net/, and each netdev's identity files. A file whose read fails prints nothing.
WALK = r"""
emit() { if cat "$1" >/tmp/cap 2>/dev/null; then echo "F $1 $(base64 -w0 /tmp/cap)"; fi; }
for d in /sys/class/infiniband/*; do
  for f in $d/*; do [ -f "$f" ] && emit "$f"; done
  [ -d $d/hw_counters ] && for f in $d/hw_counters/*; do emit "$f"; done
  for f in $(find $d/ports/ -type f | sort); do emit "$f"; done
  if [ -d $d/device/net ]; then echo "D $d/device/net"; for n in $d/device/net/*; do
    [ -e "$n" ] && echo "D $n"; done; fi
done
for n in /sys/class/net/*; do
  for f in ifindex mtu operstate type address; do emit "$n/$f"; done
done
"""

SEP = "# ttar - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -"


def slot(path):
    """(table, index) of a GID-table or pkey file, else None."""
    parts = path.split("/")
    for table in ("gids", "pkeys"):
        if table in parts and parts[-1].isdigit():
            return "/".join(parts[:-1]), int(parts[-1])
    if "gid_attrs" in parts and parts[-1].isdigit():
        return "/".join(parts[:-1]), int(parts[-1])
    return None


def to_ttar(text, header):
    entries = []
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "F":
            path, _, b64 = rest.partition(" ")
            entries.append(("F", path, base64.b64decode(b64).decode("utf-8", "replace")))
        elif kind == "D":
            entries.append(("D", rest, None))
    # The last used GID of each table; zero slots beyond it (but two) are left out.
    zero = "0000:0000:0000:0000:0000:0000:0000:0000"
    last = {}
    for kind, path, body in entries:
        s = slot(path)
        if s and "/gids" in s[0] and body.strip() != zero:
            last[s[0]] = max(last.get(s[0], -1), s[1])
    kept = []
    for kind, path, body in entries:
        s = slot(path)
        if s:
            table = s[0].replace("/gid_attrs/types", "/gids").replace("/gid_attrs/ndevs", "/gids")
            limit = 0 if s[0].endswith("/pkeys") else last.get(table, -1) + 2
            if s[1] > limit:
                continue
        kept.append((kind, path, body))
    out = [header]
    dirs = set()

    def add_dirs(path):
        parts = path.strip("/").split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if d not in dirs:
                dirs.add(d)
                out.extend(["Directory: " + d, "Mode: 755", SEP])

    for kind, path, body in kept:
        rel = path.strip("/")
        add_dirs(rel + "/x" if kind == "D" else rel)
        if kind == "D":
            continue
        lines = body.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
            out.extend(["Path: " + rel, "Lines: %d" % len(lines)] + lines + ["Mode: 444", SEP])
        else:  # no final newline: ttar's EOF marker
            out.extend(["Path: " + rel, "Lines: %d" % len(lines)] + lines[:-1] + [lines[-1] + "EOF",
                                                                                "Mode: 444", SEP])
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", required=True)
    ap.add_argument("outdir")
    a = ap.parse_args()
    with VmCluster(os.path.abspath(a.image), n=1) as c:
        c.ssh(0, SETUP, timeout=60, check=True)
        kernel = c.ssh(0, "uname -r", check=True).stdout.strip()
        views = (("sysfs_rxe_initial_netns.ttar", "", "the initial network namespace (eth0)"),
                 ("sysfs_rxe_netns_b.ttar", "/usr/sbin/ip netns exec B ",
                  "network namespace B (vb)"))
        for name, prefix, what in views:
            walk = "sh -c '%s'" % WALK.replace("'", "'\\''")
            r = c.ssh(0, prefix + walk, timeout=120, check=True)
            header = ("# captured by tests/vm/capture_rxe_sysfs.py: Debian kernel %s, rxe0 over "
                      "eth0, rxe1 over va (namespace A), rxe2 over vb (namespace B), seen from %s; "
                      "GID slots past the last used one but two and pkeys past 0 left out"
                      % (kernel, what))
            with open(os.path.join(a.outdir, name), "w") as f:
                f.write(to_ttar(r.stdout, header))
            print("wrote", name)


if __name__ == "__main__":
    main()
