"""A valid NCCL topology XML with many <pci> elements, for the topology parser's scaling test
(tests/integration/hostile_inputs/test_wide_topology.py) and bench (bench/topo/): one CPU holding
n NVMe-class devices, written the way NCCL_TOPO_DUMP_FILE writes them (~180 bytes per element).

    python3 wide_topology.py N > topo.xml
"""
import sys


def bus_id(i):
    # dddd:bb:dd.f, unique for i < 65536 * 256 * 32 * 8
    return "%04x:%02x:%02x.%d" % (i >> 16, (i >> 8) & 0xFF, (i >> 3) & 0x1F, i & 7)


def wide_topology(n, duplicate_last=False):
    """The XML text; duplicate_last repeats the first device's bus id on the last element."""
    out = ['<system version="1">\n',
           '  <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" '
           'familyid="6" modelid="143">\n']
    for i in range(n):
        b = bus_id(0 if duplicate_last and i == n - 1 else i)
        out.append('    <pci busid="%s" class="0x010802" vendor="0x144d" device="0xa80a" '
                   'subsystem_vendor="0x144d" subsystem_device="0xa801" '
                   'link_speed="16.0 GT/s PCIe" link_width="4"/>\n' % b)
    out.append("  </cpu>\n</system>\n")
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(wide_topology(int(sys.argv[1])))
