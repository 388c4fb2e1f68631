"""Valid NCCL topology XMLs of hostile sizes, for the topology parser's scaling and bounds tests
(tests/integration/hostile_inputs/test_wide_topology.py) and bench (bench/topo/).

    python3 wide_topology.py N > topo.xml              one CPU holding N NVMe-class devices,
                                                        written the way NCCL_TOPO_DUMP_FILE writes
                                                        them (~180 bytes per element)
    python3 wide_topology.py --gpus G --nics N > t.xml  G GPUs and N InfiniBand NICs side by side
                                                        under one CPU: every GPU is as near to
                                                        every NIC (G x N equally near pairs)
    python3 wide_topology.py --unknown BYTES > t.xml    a valid topology padded to BYTES with
                                                        elements NCCL does not know
"""
import sys


def bus_id(i):
    # dddd:bb:dd.f, unique for i < 65536 * 256 * 32 * 8
    return "%04x:%02x:%02x.%d" % (i >> 16, (i >> 8) & 0xFF, (i >> 3) & 0x1F, i & 7)


CPU = ('  <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" '
       'familyid="6" modelid="143">\n')


def wide_topology(n, duplicate_last=False):
    """The XML text; duplicate_last repeats the first device's bus id on the last element."""
    out = ['<system version="1">\n', CPU]
    for i in range(n):
        b = bus_id(0 if duplicate_last and i == n - 1 else i)
        out.append('    <pci busid="%s" class="0x010802" vendor="0x144d" device="0xa80a" '
                   'subsystem_vendor="0x144d" subsystem_device="0xa801" '
                   'link_speed="16.0 GT/s PCIe" link_width="4"/>\n' % b)
    out.append("  </cpu>\n</system>\n")
    return "".join(out)


def gpus_and_nics(gpus, nics):
    """G GPUs (NVIDIA 3D controllers) then N ConnectX NICs in InfiniBand mode, all directly under
    one CPU: each GPU reaches each NIC at PHB over no hops, so every NIC ties for nearest."""
    out = ['<system version="1">\n', CPU]
    for i in range(gpus):
        out.append('<pci busid="%s" class="0x030200" vendor="0x10de"/>\n' % bus_id(i))
    for i in range(nics):
        out.append('<pci busid="%s" class="0x020700" vendor="0x15b3"/>\n' % bus_id(gpus + i))
    out.append("  </cpu>\n</system>\n")
    return "".join(out)


def unknown_elements(size):
    """A one-GPU, one-NIC topology padded to `size` bytes with empty <x/> elements under <cpu>
    (NCCL skips elements it does not know; so does the parser, with a note)."""
    head = gpus_and_nics(1, 1)
    cut = head.index("  </cpu>")
    pad = max(0, size - len(head)) // 5
    text = head[:cut] + "<x/>\n" * pad + head[cut:]
    return text + "\n" * (size - len(text))  # to the byte


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--gpus"] and len(args) == 4 and args[2] == "--nics":
        sys.stdout.write(gpus_and_nics(int(args[1]), int(args[3])))
    elif args[:1] == ["--unknown"] and len(args) == 2:
        sys.stdout.write(unknown_elements(int(args[1])))
    elif len(args) == 1:
        sys.stdout.write(wide_topology(int(args[0])))
    else:
        sys.exit(__doc__)
