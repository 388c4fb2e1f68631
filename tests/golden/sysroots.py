"""The --sysroot fixture trees the golden cases probe, built in a temp dir from the committed
fixtures: the real-format sysfs capture tests/fixtures/rdma/sysfs_ib_hdr_roce_v2.ttar (mlx5_0
InfiniBand HDR, mlx5_2 RoCE v2) plus the files a node probe reads beside sysfs. Built fresh each
run so one fixture is the only source of the tree (the C++ tests unpack the same ttar)."""
import os
import shutil

SOURCE_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(SOURCE_ROOT, "tests", "fixtures")


def unpack_ttar(ttar, dest):
    """The ttar text archive format (prometheus/procfs) as tests/support/ttar.cc reads it:
    Directory:/Path:/Lines:/SymlinkTo: records; a last line ending in EOF has no newline."""
    with open(ttar) as f:
        lines = f.read().split("\n")
    i, current = 0, None
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("Directory: "):
            os.makedirs(os.path.join(dest, line[len("Directory: "):]), exist_ok=True)
        elif line.startswith("Path: "):
            current = line[len("Path: "):]
        elif line.startswith("Lines: "):
            n = int(line[len("Lines: "):])
            body = lines[i:i + n]
            if len(body) != n:
                raise ValueError("%s: truncated file body of %s" % (ttar, current))
            i += n
            text = "".join(l + "\n" for l in body[:-1]) if n else ""
            if n:
                last = body[-1]
                text += last[:-3] if last.endswith("EOF") else last + "\n"
            write(os.path.join(dest, current), text)
        elif line.startswith("SymlinkTo: "):
            target = os.path.join(dest, current)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.lexists(target):
                os.remove(target)
            os.symlink(line[len("SymlinkTo: "):], target)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make_if(root, name, ifindex, typ, flags, oper, mtu, speed=None, device=None):
    d = os.path.join(root, "sys/class/net", name)
    for k, v in (("ifindex", ifindex), ("iflink", ifindex), ("type", typ), ("flags", flags),
                 ("operstate", oper), ("mtu", mtu)):
        write(os.path.join(d, k), "%s\n" % v)
    if speed is not None:
        write(os.path.join(d, "speed"), "%s\n" % speed)
    if device:  # a NIC's sysfs entry links to its PCI function; without the link it is virtual
        os.symlink("../../../devices/pci0000:00/" + device, os.path.join(d, "device"))


def build_ib_roce_node(root):
    """An HDR InfiniBand + RoCE v2 node: the ttar capture, a 100 GbE interface, loopback, an
    8 MiB memlock limit (a finding), a 64 MiB /dev/shm, /etc/nccl.conf with a bad GID index,
    and a real hwloc export so the locality section is not skipped."""
    unpack_ttar(os.path.join(FIXTURES, "rdma", "sysfs_ib_hdr_roce_v2.ttar"), root)
    make_if(root, "lo", 1, 772, "0x9", "unknown", 65536)
    make_if(root, "ens1f0np0", 4, 1, "0x1003", "up", 9000, 100000, "0000:3b:00.1")
    write(os.path.join(root, "proc/self/limits"),
          "Limit                     Soft Limit           Hard Limit           Units\n"
          "Max stack size            8388608              unlimited            bytes\n"
          "Max open files            1048576              1048576              files\n"
          "Max locked memory         8388608              8388608              bytes\n")
    write(os.path.join(root, "proc/mounts"), "shm /dev/shm tmpfs rw,size=65536k 0 0\n")
    write(os.path.join(root, "etc/nccl.conf"), "NCCL_SOCKET_IFNAME=ens1f0np0\nNCCL_IB_GID_INDEX=abc\n")
    shutil.copy(os.path.join(FIXTURES, "real", "hwloc", "hwloc_24em64t-2n6c2t-pci.xml"),
                os.path.join(root, "hwloc.xml"))


def build_ib_roce_node_with_topo(root):
    """The node above with the NCCL topology file tests/fixtures/profile/cluster-roce.json names
    (/opt/fabkit/topo.xml) in place."""
    build_ib_roce_node(root)
    os.makedirs(os.path.join(root, "opt/fabkit"))
    shutil.copy(os.path.join(FIXTURES, "topo", "nccl_eth_and_ib_nics.xml"),
                os.path.join(root, "opt/fabkit/topo.xml"))


def overlay_roce_qos(root, fixture):
    """The sysfs files of a tests/fixtures/roce_qos fixture (netdev MTU, MLNX_OFED qos/trust and
    ecn/*/enable) over the RoCE port of the tree; the DCB and ethtool answers come from the same
    file through --qos-replay."""
    import json
    with open(os.path.join(FIXTURES, "roce_qos", fixture + ".json")) as f:
        for path, content in json.load(f)["sysfs"].items():
            write(os.path.join(root, "sys", path), content)


def build_roce_qos_healthy_node(root):
    """The ib-roce node with tests/fixtures/roce_qos/healthy.json's sysfs: trust dscp, ECN on."""
    build_ib_roce_node(root)
    overlay_roce_qos(root, "healthy")


def build_roce_qos_pfc_off_node(root):
    """The ib-roce node with the sysfs of pfc_off_nccl_priority.json (DOC-2792's PFC row)."""
    build_ib_roce_node(root)
    overlay_roce_qos(root, "pfc_off_nccl_priority")


def build_gpu_node_degraded(root):
    """Issue #18's case as a new user meets it: a GPU node's PCI tree (tests/fixtures/pcie) with
    GPU 0000:02:00.0 trained at Gen4 x8 of its Gen5 x16, and a kernel log (dev/kmsg, dmesg text:
    the real lines of wilicc/gpu-burn#1) where the root port above it reports a fatal AER error
    and the GPU logs Xid 79."""
    for name in ("sysfs_gpu_node.ttar", "pci_ids_excerpt.ttar", "overlay_gpu_gen4_x8.ttar"):
        unpack_ttar(os.path.join(FIXTURES, "pcie", name), root)
    with open(os.path.join(FIXTURES, "kernel_log", "dmesg_aer_fatal_xid79.txt")) as f:
        write(os.path.join(root, "dev", "kmsg"), f.read())


def build_empty_node(root):
    """A tree with nothing in it: every section says unknown rather than guessing."""
    os.makedirs(root, exist_ok=True)




def _efa_node(root, ttar):
    """An EFA instance from tests/fixtures/efa (README.md there: reconstructed from public
    values), plus what the node probe reads beside sysfs: an unlimited memlock (EFA registers
    memory), /dev/shm, and a /proc/meminfo whose huge page pool the aws-efa-installer reserved."""
    unpack_ttar(os.path.join(FIXTURES, "efa", ttar), root)
    make_if(root, "lo", 1, 772, "0x9", "unknown", 65536)
    # The ENA interface beside the EFA devices (uccl-project/uccl names the p4d's ens32; its PCI
    # function here is reconstructed); 9001 is the VPC's jumbo MTU.
    make_if(root, "ens32", 2, 1, "0x1003", "up", 9001, None, "0000:00:05.0")
    write(os.path.join(root, "proc/self/limits"),
          "Limit                     Soft Limit           Hard Limit           Units\n"
          "Max stack size            8388608              unlimited            bytes\n"
          "Max open files            1048576              1048576              files\n"
          "Max locked memory         unlimited            unlimited            bytes\n")
    write(os.path.join(root, "proc/mounts"), "shm /dev/shm tmpfs rw,size=8388608k 0 0\n")
    # The kernel of aws-ofi-nccl's p4d capture (its hwloc XML's OSRelease).
    write(os.path.join(root, "proc/sys/kernel/osrelease"), "6.14.0-1018-aws\n")
    write(os.path.join(root, "proc/meminfo"),
          "MemTotal:       1176587520 kB\nHugePages_Total:   10562\nHugePages_Free:    10562\n"
          "HugePages_Rsvd:        0\nHugePages_Surp:        0\nHugepagesize:       2048 kB\n")
    _aws_ofi_nccl_plugin(root)


# The net plugin where the EFA installer puts it (the cases point LD_LIBRARY_PATH at it, as the
# AWS guides do). The real aws-ofi-nccl is not redistributable here, so this is a stand-in the
# C compiler builds when the tree is made: an ELF shared object with the plugin tables NCCL
# looks up (ncclNetPlugin_v8/_v7) and the version line aws-ofi-nccl 1.9.1 logs
# (aws/aws-k8s-tester#454). The probe reads only those, without loading the file.
AWS_OFI_NCCL_DIR = "opt/amazon/ofi-nccl/lib"


def _aws_ofi_nccl_plugin(root):
    import subprocess
    import tempfile
    out = os.path.join(root, AWS_OFI_NCCL_DIR, "libnccl-net.so")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    src = ("int ncclNetPlugin_v8[8] = {8};\nint ncclNetPlugin_v7[8] = {7};\n"
           "const char ofi_version_text[] = \"NET/OFI Initializing aws-ofi-nccl 1.9.1-aws\";\n"
           "const char* ofi_version(void) { return ofi_version_text; }\n")
    with tempfile.TemporaryDirectory() as tmp:
        c = os.path.join(tmp, "plugin.c")
        write(c, src)
        subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O1", "-o", out, c],
                       check=True)


def build_efa_p4d_node(root):
    """p4d.24xlarge with its 4 EFA devices, all ACTIVE: a healthy EFA node."""
    _efa_node(root, "sysfs_p4d_4efa.ttar")


def build_efa_p5_missing_node(root):
    """p5.48xlarge with rdmap201s0 gone: 31 of its 32 EFA devices."""
    _efa_node(root, "sysfs_p5_32efa.ttar")
    shutil.rmtree(os.path.join(root, "sys/class/infiniband/rdmap201s0"))


def build_efa_g5_node(root):
    """g5.48xlarge with its one EFA device (no device RDMA)."""
    _efa_node(root, "sysfs_g5_1efa.ttar")


def build_efa_p4d_memlock_node(root):
    """The p4d with an 8 MiB memlock limit (Debian's default): EFA registers memory, so the
    limits probe's memlock finding must count EFA devices as RDMA devices."""
    _efa_node(root, "sysfs_p4d_4efa.ttar")
    write(os.path.join(root, "proc/self/limits"),
          "Limit                     Soft Limit           Hard Limit           Units\n"
          "Max locked memory         8388608              8388608              bytes\n")
