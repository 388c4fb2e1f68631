"""`fabcheck nccl-log -` reads standard input under the same 512 MiB limit as a file, enforced
while reading (issue #19: 3 GiB piped in grew past 900 MB of memory): a stream just over the limit
is refused with exit 2 naming the limit and the fix, and memory stays near the limit. The stream
is generated as it is written, never stored.

Run: test_nccl_log_limit.py /path/to/fabcheck
"""
import os
import resource
import subprocess
import sys
import tempfile
import unittest

FABCHECK = None
LIMIT = 512 << 20
LINE = b"host:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"


class NcclLogLimit(unittest.TestCase):
    def test_stdin_past_the_limit_is_refused_while_reading(self):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        p = subprocess.Popen([FABCHECK, "nccl-log", "-"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        chunk = LINE * ((1 << 20) // len(LINE))
        sent = 0
        try:
            while sent <= LIMIT + (8 << 20):  # 8 MiB past the limit
                p.stdin.write(chunk)
                sent += len(chunk)
            p.stdin.close()
        except BrokenPipeError:  # fabcheck stopped reading at the limit, as it should
            pass
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 2, (out[-2000:], err[-2000:]))
        msg = (out + err).decode(errors="replace")
        self.assertIn("nccl-log standard input: more than 512 MiB", msg)
        self.assertIn("grep -n 'NCCL INFO'", msg)  # the fix
        # ru_maxrss is KiB: the reader holds at most the limit (plus the program), never the
        # whole stream doubled by a growing buffer.
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
        self.assertGreater(peak_mib, before // 1024)  # the measurement saw this child
        self.assertLess(peak_mib, 512 + 128, "peak RSS %d MiB" % peak_mib)

    def test_a_file_past_the_limit_is_refused_with_the_same_message(self):
        with tempfile.NamedTemporaryFile(suffix=".log") as f:
            f.truncate(LIMIT + 1)  # sparse: no disk used
            r = subprocess.run([FABCHECK, "nccl-log", f.name], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn("nccl-log %s: more than 512 MiB" % f.name, r.stdout + r.stderr)

    def test_a_log_under_the_limit_is_read_from_stdin(self):
        r = subprocess.run([FABCHECK, "nccl-log", "-"], input=LINE * 10, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_nccl_log_limit.py /path/to/fabcheck")
    FABCHECK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
