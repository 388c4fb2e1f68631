"""`fabcheck nccl-log -` reads standard input under the same 512 MiB limit as a file, enforced
while reading (issue #19: 3 GiB piped in grew past 900 MB of memory): a stream just over the limit
is refused with exit 2 naming the limit and the fix, and memory stays near the limit. The stream
is generated as it is written, never stored. The log is parsed as it is read (issue #36: 512 MiB
took 4.6 GB): memory does not follow the log's size.

Run: test_nccl_log_limit.py /path/to/fabcheck
"""
import glob
import os
import subprocess
import sys
import tempfile
import unittest

FABCHECK = None
LIMIT = 512 << 20
LINE = b"host:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures",
                        "nccl_log")


def fixture_block():
    """Every NCCL log fixture (the real failing jobs' included) joined: the lines a log holds."""
    paths = sorted(glob.glob(os.path.join(FIXTURES, "*.log")) +
                   glob.glob(os.path.join(FIXTURES, "real", "*.log")))
    block = b""
    for p in paths:
        with open(p, "rb") as f:
            block += f.read().rstrip(b"\n") + b"\n"
    assert len(block) > 100 << 10, len(block)
    return block


def peak_rss_mib(argv, stdin_bytes, total):
    """Runs argv with `total` bytes of stdin_bytes repeated on its standard input, in a child that
    reports its peak RSS: (exit code, output, MiB)."""
    # A fresh Python child per measurement: RUSAGE_CHILDREN keeps the largest child so far.
    code = (
        "import resource, subprocess, sys\n"
        "block = sys.stdin.buffer.read()\n"
        "p = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE,\n"
        "                     stderr=subprocess.STDOUT)\n"
        "sent, total = 0, int(sys.argv[1])\n"
        "import threading\n"
        "out = []\n"
        "t = threading.Thread(target=lambda: out.append(p.stdout.read())); t.start()\n"
        "try:\n"
        "    while sent < total:\n"
        "        n = min(len(block), total - sent); p.stdin.write(block[:n]); sent += n\n"
        "    p.stdin.close()\n"
        "except BrokenPipeError:\n"
        "    pass\n"
        "p.wait(); t.join()\n"
        "sys.stdout.buffer.write(b'%d %d\\n' % (p.returncode,\n"
        "    resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
        "sys.stdout.buffer.write(out[0][-3000:])\n")
    r = subprocess.run([sys.executable, "-c", code, str(total)] + argv, input=stdin_bytes,
                       stdout=subprocess.PIPE, timeout=600)
    head, _, out = r.stdout.partition(b"\n")
    rc, kib = head.split()
    return int(rc), out.decode(errors="replace"), int(kib) // 1024


class NcclLogLimit(unittest.TestCase):
    def test_stdin_past_the_limit_is_refused_while_reading(self):
        rc, msg, peak_mib = peak_rss_mib([FABCHECK, "nccl-log", "-"],
                                         LINE * ((1 << 20) // len(LINE)), LIMIT + (8 << 20))
        self.assertEqual(rc, 2, msg[-2000:])
        self.assertIn("nccl-log standard input: more than 512 MiB", msg)
        self.assertIn("grep -n 'NCCL INFO'", msg)  # the fix
        # The log is parsed as it is read: memory is the program and a buffer, never the stream
        # (read whole, it was the limit and more).
        self.assertLess(peak_mib, 64, "peak RSS %d MiB" % peak_mib)

    def test_a_file_past_the_limit_is_refused_with_the_same_message(self):
        with tempfile.NamedTemporaryFile(suffix=".log") as f:
            f.truncate(LIMIT + 1)  # sparse: no disk used
            r = subprocess.run([FABCHECK, "nccl-log", f.name], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn("nccl-log %s: more than 512 MiB" % f.name, r.stdout + r.stderr)

    def test_memory_does_not_follow_the_logs_size(self):
        # The fixtures repeated to 4 MiB and to 128 MiB: held whole, the larger took at least its
        # own size more (and the parser's lists several times that); parsed as it is read, the
        # two peaks differ by the lists' caps at most.
        block = fixture_block()
        rc_small, out_small, small = peak_rss_mib([FABCHECK, "nccl-log", "--json", "-"], block,
                                                  4 << 20)
        self.assertIn(rc_small, (0, 1), out_small)
        rc, out, big = peak_rss_mib([FABCHECK, "nccl-log", "--json", "-"], block, 128 << 20)
        self.assertIn(rc, (0, 1), out)
        self.assertLess(big - small, 48, "peak RSS %d MiB for 128 MiB of log, %d MiB for 4 MiB"
                        % (big, small))

    def test_a_log_under_the_limit_is_read_from_stdin(self):
        r = subprocess.run([FABCHECK, "nccl-log", "-"], input=LINE * 10, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_nccl_log_limit.py /path/to/fabcheck")
    FABCHECK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
