#!/usr/bin/env python3
"""`fabcheck node --json` on this machine and on a --sysroot fixture tree, checked against the
system's own tools (ip -j addr, ulimit -l, nvidia-smi, /sys/class/infiniband) and against the
fixture's facts. Nothing about this machine is assumed: a GPU node (also inside an NVIDIA
container, where `ip` may be missing) is checked against what its own tools report.
usage: node_cli_test.py FABCHECK SOURCE_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fabcheck_run import check, clean_env, parse, run  # noqa: E402

FABCHECK, SOURCE_DIR = sys.argv[1], sys.argv[2]


def exit_code_for(findings):
    return 1 if any(f["severity"] in ("warn", "fail") for f in findings) else 0


def test_live():
    p = run([FABCHECK, "node", "--json"])
    check(p.returncode in (0, 1), f"exit {p.returncode}, stderr: {p.stderr}")
    pairs, doc = parse(p.stdout)
    check(pairs[0][0] == "schema_version", f"first key is {pairs[0][0]}, not schema_version")
    check(doc["kind"] == "node", "kind")
    check(p.returncode == exit_code_for(doc["findings"]),
          f"exit {p.returncode} does not match the findings' severities")

    ours = {i["name"]: i for i in doc["net"]["interfaces"]}
    check_interfaces(ours)
    check(ours["lo"]["kind"] == "loopback" and ours["lo"]["virtual"], "lo is a virtual loopback")
    check(doc["net"]["recommended"]["name"] != "lo", "never recommend loopback")
    check_gpus(doc)
    check_rdma(doc)

    # memlock soft limit: what the shell reports for the same environment.
    out = subprocess.run(["sh", "-c", "ulimit -l"], capture_output=True, text=True,
                         env=clean_env()).stdout.strip()
    soft = doc["limits"]["memlock_bytes"]["soft"]
    check(soft == ("unlimited" if out == "unlimited" else int(out) * 1024),
          f"memlock soft {soft} vs ulimit -l {out}")
    check("nccl_env" in doc and isinstance(doc["nccl_env"]["variables"], list), "nccl_env section")
    check_pcie(doc)
    check_kernel_log(doc)


def check_pcie(doc):
    """Every GPU and NIC function in /sys/bus/pci/devices is in the pcie section (virtual
    functions excepted), with the link attributes the files hold."""
    base = "/sys/bus/pci/devices"
    if not os.path.isdir(base):
        check(doc["pcie"]["pci_bus_present"] is False, "no /sys/bus/pci but pci_bus_present")
        return
    ours = {d["bus_id"]: d for d in doc["pcie"]["devices"]}

    def attr(bdf, name):
        try:
            with open(os.path.join(base, bdf, name)) as f:
                return f.read().strip()
        except OSError:
            return None
    for bdf in os.listdir(base):
        cls = int(attr(bdf, "class") or "0", 16)
        vendor = attr(bdf, "vendor")
        nic = (cls >> 16) == 0x02
        gpu = ((vendor == "0x10de" and (cls >> 8) in (0x0300, 0x0302)) or
               (vendor == "0x1002" and (cls >> 8) in (0x0300, 0x0302, 0x0380, 0x1200)))
        if not (nic or gpu) or os.path.exists(os.path.join(base, bdf, "physfn")):
            continue
        if gpu and vendor == "0x1002" and attr(bdf, "device") == "0x515e":
            continue  # the BMC's ES1000 VGA is not a GPU (topo::is_gpu_pci)
        check(bdf in ours, f"{bdf} (class {cls:#08x}) missing from the pcie section")
        for f, k in (("current_link_speed", "current_speed"), ("current_link_width", "current_width"),
                     ("max_link_speed", "max_speed"), ("max_link_width", "max_width")):
            check(ours[bdf]["link"][k] == attr(bdf, f), f"{bdf} {f}: {ours[bdf]['link'][k]} vs {attr(bdf, f)}")


def check_kernel_log(doc):
    """Read as root (or where dmesg_restrict is 0); otherwise an info saying why, never a fault."""
    k = doc["kernel_log"]
    restrict = open("/proc/sys/kernel/dmesg_restrict").read().strip() if os.path.exists(
        "/proc/sys/kernel/dmesg_restrict") else "0"
    if not os.path.exists("/dev/kmsg"):
        check(not k["readable"], "no /dev/kmsg but readable")
        return
    if os.geteuid() == 0 or restrict == "0":
        check(k["readable"] and k["format"] == "kmsg" and k["records"] > 0, f"kernel log not read: {k}")
    else:
        check(not k["readable"] and "dmesg_restrict" in k["unreadable_reason"], f"kernel log: {k}")
        codes = [f for f in doc["findings"] if f["code"].startswith("kernel_log.")]
        check([f["code"] for f in codes] == ["kernel_log.unreadable"] and codes[0]["severity"] == "info",
              f"unreadable kernel log findings: {codes}")


# Interfaces the other fabkit tests create and delete in this namespace while this one runs
# (ctest -j): veth ends named fk<tag>... (tests/integration/{netns,allreduce,node}). Between
# fabcheck's read and ip's they may come or go, so both sides leave them out.
def steady(names):
    return {n for n in names if not n.startswith("fk")}


def check_interfaces(ours):
    """The same names, addresses and flags as `ip -j addr`; names only (from sysfs) without ip."""
    ours = {k: v for k, v in ours.items() if k in steady(ours)}
    if shutil.which("ip") is None:
        # NVIDIA's CUDA images ship without iproute2.
        names = steady(os.listdir("/sys/class/net"))
        check(set(ours) == names, f"interfaces differ: fabcheck {sorted(ours)} vs sysfs {sorted(names)}")
        print("note: `ip` is not installed; addresses and flags not cross-checked (names checked "
              "against /sys/class/net)")
        return
    ip = [l for l in json.loads(subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True,
                                               check=True).stdout) if l["ifname"] in steady([l["ifname"]])]
    check(set(ours) == {l["ifname"] for l in ip},
          f"interfaces differ: fabcheck {sorted(ours)} vs ip {sorted(l['ifname'] for l in ip)}")
    for link in ip:
        mine = ours[link["ifname"]]
        want = sorted((("ipv4" if a["family"] == "inet" else "ipv6"), a["local"], a["prefixlen"])
                      for a in link.get("addr_info", []) if a["family"] in ("inet", "inet6"))
        got = sorted((a["family"], a["address"], a["prefix_len"]) for a in mine["addresses"])
        check(got == want, f"{link['ifname']}: addresses {got} vs ip {want}")
        up = "UP" in link["flags"]
        check(mine["up"] == up, f"{link['ifname']}: up {mine['up']} vs ip flags {link['flags']}")
        # IFF_RUNNING = up and operstate UP/UNKNOWN (what `ip` prints as operstate).
        running = up and link.get("operstate") in ("UP", "UNKNOWN")
        check(mine["running"] == running,
              f"{link['ifname']}: running {mine['running']} vs ip operstate {link.get('operstate')}")
        check(mine["mtu"] == link["mtu"], f"{link['ifname']}: mtu {mine['mtu']} vs {link['mtu']}")


def nvidia_gpus_in_sysfs():
    n = 0
    for dev in os.listdir("/sys/bus/pci/devices"):
        base = os.path.join("/sys/bus/pci/devices", dev)
        try:
            vendor = open(os.path.join(base, "vendor")).read().strip()
            cls = open(os.path.join(base, "class")).read().strip()
        except OSError:
            continue
        n += vendor == "0x10de" and cls.startswith("0x03")
    return n


def check_gpus(doc):
    """The gpus section against nvidia-smi (its own NVML client) when present, else against the
    absence of a driver: never an assumption that the machine has no GPU."""
    g = doc["gpus"]
    codes = {f["code"]: f for f in doc["findings"] if f["code"].startswith("gpu.")}
    smi = shutil.which("nvidia-smi")
    if g["driver_loaded"]:
        check("gpu.found" in codes, f"driver loaded but no gpu.found: {sorted(codes)}")
        if smi is None:
            print("note: nvidia-smi not installed; GPU inventory not cross-checked")
            return
        out = subprocess.run([smi, "--query-gpu=uuid,pci.bus_id,name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=60)
        check(out.returncode == 0, f"nvidia-smi failed: {out.stderr}")
        want = sorted((u.strip(), b.strip().lower()[4:], n.strip())
                      for u, b, n in (l.split(",", 2) for l in out.stdout.strip().splitlines()))
        got = sorted((d["uuid"], d["bus_id"], d["name"]) for d in g["devices"])
        check(got == want, f"GPUs: fabcheck {got} vs nvidia-smi {want}")
        return
    check(g["count"] == 0 and g["devices"] == [], f"no driver but devices listed: {g}")
    on_bus = nvidia_gpus_in_sysfs()
    want = "gpu.no_driver" if on_bus == 0 else "gpu.driver_missing"
    if g["nvml_loaded"] and "Driver Not Loaded" not in (g["nvml_error"] or ""):
        want = "gpu.nvml_error"
    check(want in codes, f"expected {want} ({on_bus} NVIDIA GPU(s) in sysfs): {sorted(codes)}")
    check(g["nvml_error"], "no driver and no reason")


def check_rdma(doc):
    """RDMA devices: the same names as /sys/class/infiniband (none on most test machines)."""
    if not os.path.exists(os.path.join(SOURCE_DIR, "probes/rdma/CMakeLists.txt")):
        print("note: probes/rdma not in the tree; rdma assertions not applicable")
        return
    check("rdma" in doc, "the rdma probe is built but the report has no rdma section")
    sysfs = "/sys/class/infiniband"
    names = sorted(os.listdir(sysfs)) if os.path.isdir(sysfs) else []
    got = sorted(d["name"] for d in doc["rdma"]["devices"])
    check(got == names, f"rdma devices {got} vs {sysfs} {names}")
    if not names:
        check(any(f["code"].startswith("rdma.") and f["severity"] == "info"
                  for f in doc["findings"]), "no info finding about the missing RDMA devices")


def test_bad_flags():
    p = run([FABCHECK, "node", "--json", "--no-such-flag"])
    check(p.returncode == 2, f"bad flag: exit {p.returncode}")
    pairs, doc = parse(p.stdout)
    check(pairs[0][0] == "schema_version", "error JSON starts with schema_version")
    check(doc["error"]["exit_code"] == 2 and "no-such-flag" in doc["error"]["message"],
          f"error document {doc}")
    p = run([FABCHECK, "node", "--json", "--sysroot", "/nonexistent/fabkit"])
    check(p.returncode == 2 and "--sysroot" in json.loads(p.stdout)["error"]["message"],
          f"missing sysroot: exit {p.returncode} {p.stdout}")
    p = run([FABCHECK, "node", "--json", "--since", "yesterday"])
    check(p.returncode == 2 and "--since 'yesterday'" in json.loads(p.stdout)["error"]["message"],
          f"bad --since: exit {p.returncode} {p.stdout}")
    p = run([FABCHECK, "node", "--json", "--since", "1h"])
    check(p.returncode in (0, 1) and json.loads(p.stdout)["kernel_log"]["since"] == "1h",
          f"--since 1h: exit {p.returncode}")
    p = run([FABCHECK, "nccl-log", "--json", "/nonexistent/nccl.log"])
    check(p.returncode == 2 and json.loads(p.stdout)["error"]["exit_code"] == 2,
          f"missing log: exit {p.returncode}")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make_if(root, name, ifindex, typ, flags, oper, mtu, speed=None, device=None):
    d = os.path.join(root, "sys/class/net", name)
    for k, v in (("ifindex", ifindex), ("iflink", ifindex), ("type", typ), ("flags", flags),
                 ("operstate", oper), ("mtu", mtu)):
        write(os.path.join(d, k), f"{v}\n")
    if speed is not None:
        write(os.path.join(d, "speed"), f"{speed}\n")
    if device:
        os.symlink(f"../../../devices/pci0000:00/{device}", os.path.join(d, "device"))


def test_sysroot():
    root = tempfile.mkdtemp(prefix="fabkit-sysroot-")
    try:
        make_if(root, "lo", 1, 772, "0x9", "unknown", 65536)
        make_if(root, "eth0", 2, 1, "0x1003", "up", 9000, 25000, "0000:17:00.0")
        make_if(root, "ib0", 3, 32, "0x1003", "up", 2044, 100000, "0000:3b:00.0")
        make_if(root, "docker0", 4, 1, "0x1003", "down", 1500)
        os.makedirs(os.path.join(root, "sys/class/net/docker0/bridge"))
        write(os.path.join(root, "proc/self/limits"),
              "Limit                     Soft Limit           Hard Limit           Units\n"
              "Max stack size            8388608              unlimited            bytes\n"
              "Max open files            1048576              1048576              files\n"
              "Max locked memory         8388608              8388608              bytes\n")
        write(os.path.join(root, "proc/mounts"), "shm /dev/shm tmpfs rw,size=65536k 0 0\n")
        write(os.path.join(root, "etc/nccl.conf"), "NCCL_SOCKET_IFNAME=eth9\nNCCL_IB_GID_INDEX=abc\n")
        write(os.path.join(root, "root/.nccl.conf"), "NCCL_DEBUG=INFO\nNCCL_IB_GID_INDEX=3\n")
        p = run([FABCHECK, "node", "--json", "--sysroot", root])
        _, doc = parse(p.stdout)
        check(doc["hostname"] == "sysroot:" + root, f"hostname {doc['hostname']}")
        net = doc["net"]
        check(net["source"] == "sysfs" and net["addresses_known"] is False, "sysfs-only source")
        ifs = {i["name"]: i for i in net["interfaces"]}
        check(sorted(ifs) == ["docker0", "eth0", "ib0", "lo"], f"interfaces {sorted(ifs)}")
        check((ifs["eth0"]["kind"], ifs["eth0"]["speed_mbps"], ifs["eth0"]["mtu"],
               ifs["eth0"]["running"], ifs["eth0"]["addresses"]) ==
              ("physical", 25000, 9000, True, None), f"eth0 {ifs['eth0']}")
        check((ifs["ib0"]["kind"], ifs["ib0"]["virtual"]) == ("ipoib", False), f"ib0 {ifs['ib0']}")
        check((ifs["docker0"]["kind"], ifs["docker0"]["running"]) == ("docker", False), "docker0")
        check(ifs["lo"]["speed_mbps"] is None, "lo has no speed")
        s = net["nccl_socket_ifname"]
        check((s["value"], s["source"], s["matched"]) ==
              ("eth9", os.path.join(root, "etc/nccl.conf"), []), f"socket ifname {s}")
        vars_ = {v["name"]: v for v in doc["nccl_env"]["variables"]}
        check(vars_["NCCL_DEBUG"]["source"] == os.path.join(root, "root/.nccl.conf"), "NCCL_DEBUG")
        check(vars_["NCCL_IB_GID_INDEX"]["value"] == "3", "first file wins for NCCL_IB_GID_INDEX")
        codes = {(f["code"], f["severity"]) for f in doc["findings"]}
        for want in (("net.ifname_matches_nothing", "fail"), ("net.addresses_unknown", "info"),
                     ("nccl_env.overridden", "info")):
            check(want in codes, f"missing finding {want}; have {sorted(codes)}")
        check(("nccl_env.bad_value", "warn") not in codes, "the overridden 'abc' is not in effect")
        check(doc["limits"]["memlock_bytes"]["soft"] == 8388608, "memlock from proc/self/limits")
        check(p.returncode == 1, f"exit {p.returncode} with a fail finding")
    finally:
        shutil.rmtree(root)


def test_nccl_log():
    log = os.path.join(SOURCE_DIR, "tests/fixtures/nccl_log/nccl_2.21_socket_fallback.log")
    p = run([FABCHECK, "nccl-log", log, "--json"])
    pairs, doc = parse(p.stdout)
    check(pairs[0][0] == "schema_version" and doc["kind"] == "nccl-log", "nccl-log JSON header")
    check(doc["nccl_log"]["network"] == "Socket", "network")
    check(p.returncode == 1 and any(f["code"] == "nccl_log.socket_fallback"
                                    for f in doc["findings"]), "socket fallback finding")
    p = run([FABCHECK, "nccl-log", os.path.join(SOURCE_DIR,
                                                "tests/fixtures/nccl_log/nccl_2.18_ib_gdr.log"),
             "--json", "--expect", "IB"])
    check(p.returncode == 0, f"clean IB log: exit {p.returncode}: {p.stdout}")

    # A failure line carrying escape sequences (set the window title, clear the screen, a C1 CSI):
    # the text report shows them, and sends none to the terminal, from a file or from stdin. (A
    # connect failure: a WARN matching no rule, with INFO lines and no error trace, is no failure
    # and is not quoted.)
    evil = "\x1b]0;pwned\x07\x1b[2J\u009b31m"
    line = f"gpu-a01:1:1 [0] misc/socket.cc:50 NCCL WARN Net : Connect to bad peer {evil} failed : Connection refused\n"
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write("gpu-a01:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.20.0.7<0>\n" + line)
    try:
        for args, stdin in (([f.name], None), (["-"], open(f.name, "rb").read())):
            p = subprocess.run([FABCHECK, "nccl-log"] + args, input=stdin, capture_output=True,
                               env=clean_env())
            out = p.stdout.decode("utf-8", "replace")
            check(b"\x1b" not in p.stdout and b"\x07" not in p.stdout
                  and "\u009b" not in out, f"raw escapes reached the terminal: {out!r}")
            check("bad peer \\x1b]0;pwned\\x07\\x1b[2J\\u009b31m" in out,
                  f"escapes not shown: {out!r}")
    finally:
        os.unlink(f.name)


def test_nvidia_container_env():
    """What NVIDIA's CUDA/NGC images export (NCCL_VERSION, NV_LIBNCCL_*) is no NCCL setting: no
    nccl_env warning for it (fabcheck node used to exit 1 in every such container), while a typo
    of a real variable still warns."""
    image = {"NCCL_VERSION": "2.28.9", "NV_LIBNCCL_DEV_PACKAGE": "libnccl-dev=2.28.9-1+cuda13.0",
             "NV_LIBNCCL_PACKAGE_VERSION": "2.28.9-1"}
    p = run([FABCHECK, "node", "--json"], env=clean_env(image))
    doc = json.loads(p.stdout)
    bad = [f for f in doc["findings"] if f["code"].startswith("nccl_env.") and f["severity"] != "info"]
    check(not bad, f"image variables produce nccl_env warnings: {bad}")
    check(any(f["code"] == "nccl_env.image_variable" and f["subject"] == "NCCL_VERSION" for f in doc["findings"]),
          "NCCL_VERSION not reported as an image variable")
    p = run([FABCHECK, "node", "--json"], env=clean_env(dict(image, NCCL_SOCKET_IFNAM="eth0")))
    doc = json.loads(p.stdout)
    typo = [f for f in doc["findings"] if f["code"] == "nccl_env.unknown_variable"]
    check(len(typo) == 1 and typo[0]["subject"] == "NCCL_SOCKET_IFNAM" and typo[0]["severity"] == "warn"
          and "NCCL_SOCKET_IFNAME" in typo[0]["fix"], f"typo not flagged: {typo}")
    check(p.returncode == 1, f"a warning must exit 1, got {p.returncode}")


for t in (test_live, test_bad_flags, test_sysroot, test_nccl_log, test_nvidia_container_env):
    t()
    print(f"ok {t.__name__}")
