"""perftest (Debian's perftest 4.5) between two soft-RoCE VMs of tests/vm, for the benchmarks that
compare against it (bench/rdma/rc_bench.py, bench/allreduce/vm_rdma_bench.py): running a
server/client pair and reading its report as perftest prints it."""


def parse_bw(text):
    """Gbit/s (1e9 bit/s) from ib_write_bw's default report: the row under the '#bytes' header,
    'BW average[MB/sec]' its fourth column, where perftest's MB is 2^20 bytes (its format_factor
    0x100000). --report_gbits would print two decimals only: too coarse for a ratio."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("#bytes") and "BW average[MB/sec]" in line:
            for row in lines[i + 1:]:
                cols = row.split()
                if len(cols) >= 4 and cols[0].isdigit():
                    return float(cols[3]) * 1048576 * 8 / 1e9
    raise ValueError("no bandwidth row in perftest output:\n" + text[-800:])


def parse_lat(text):
    """t_typical (usec, one way) from ib_write_lat / ib_send_lat: the row under the '#bytes'
    header whose columns are #bytes #iterations t_min t_max t_typical ..."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("#bytes") and "t_typical" in line:
            head = line.split()
            k = head.index("t_typical[usec]") if "t_typical[usec]" in head else 4
            for row in lines[i + 1:]:
                cols = row.split()
                if len(cols) > k and cols[0].isdigit():
                    return float(cols[k])
    raise ValueError("no latency row in perftest output:\n" + text[-800:])


def run(c, server_cmd, client_cmd):
    """Runs a perftest pair: the server on vm1 in the background, the client on vm0."""
    c.ssh(1, "%s >/tmp/perftest-server.log 2>&1 &" % server_cmd, check=True)
    # The server listens on its TCP port for the exchange; the client retries its connect briefly.
    r = c.ssh(0, "for i in 1 2 3 4 5 6 7 8 9 10; do %s %s && exit 0; sleep 0.5; done; exit 1"
              % (client_cmd, c.addr(1)), timeout=300)
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s %s" % (client_cmd, r.stdout[-800:], r.stderr[-800:]))
    return r.stdout
