"""fabcheck pair's progress line (docs/reports.md, "Progress") between two network-namespace hosts
(tests/integration/netns/netns.py, with the decoy interfaces: 3 x 3 interface pairs to measure, a
few seconds). With stderr on a pseudo-terminal the run draws redrawn frames there (carriage return,
a bar with percent and ETA, erase to end of line) while stdout's JSON is the same report and parses;
with stderr a pipe, or with --no-progress on a terminal, stderr gets no frame at all.

Run: test_pair_progress.py /path/to/fabcheck   (root; skips with the reason otherwise)
"""
import fcntl
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
import netns  # noqa: E402

FABCHECK = None
LAUNCHER = "ip netns exec {host} env NCCL_HOSTID={host}"
# One transport keeps the run short; the 4 interface pairs (fab0 and slow0 each side: the dead0
# decoys are refused, an address no peer may contact) with the shaped slow0 link last keep the
# link probes past the 1 s before anything is drawn.
FAST = ["--pings", "200", "--bandwidth-ms", "300", "--streams", "2", "--warmup-iters", "1",
        "--timeout-ms", "4000", "--transport-timeout-ms", "60000", "--transports", "fabkit-socket"]
SMALL = ["--sizes", "4K,64K", "--iters", "3"]
# A sweep that lasts more than a second on a veth (the 128 MiB size alone moves 2.6 GiB), so its
# per-size bar is drawn.
LONG_SWEEP = ["--sizes", "16M,32M,64M,128M", "--iters", "20"]
# One frame: carriage return, the text, erase to the end of the line.
FRAME = re.compile(r"\r([^\r\x1b]+)\x1b\[K")


class PairProgressTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.world = netns.NetnsWorld(hosts=2, decoys=True, controller=True).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.world.close()

    def argv(self, *extra, world=None):
        w = world or self.world
        return ["ip", "netns", "exec", w.ctl, FABCHECK, "pair", *w.hosts, "--launcher", LAUNCHER,
                *FAST, *extra]

    def run_on_pty(self, *extra, world=None):
        """stdout a pipe, stderr a pseudo-terminal (isatty() true, as on a user's terminal)."""
        master, slave = os.openpty()
        # 200 columns: frames are cut to the terminal's width, and a new pty has none (80 is assumed).
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        p = subprocess.Popen(self.argv(*extra, world=world), stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        chunks = []

        def read_all():
            while True:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: every copy of the slave side is closed
                    return
                if not data:
                    return
                chunks.append(data)

        reader = threading.Thread(target=read_all)
        reader.start()
        out, _ = p.communicate(timeout=90)
        reader.join(timeout=10)
        os.close(master)
        return p.returncode, out.decode(), b"".join(chunks).decode(errors="replace")

    def check_report(self, rc, out):
        self.assertIn(rc, (0, 1), out[-2000:])
        self.assertNotIn("\r", out)
        self.assertNotIn("\x1b", out)
        return out

    def test_frames_on_a_terminal_and_the_json_unchanged(self):
        rc, out, err = self.run_on_pty("--json", *LONG_SWEEP)
        doc = json.loads(self.check_report(rc, out))
        self.assertEqual(1, doc["pair"]["pair_version"])
        self.assertTrue(all(s["status"] == "ok" for s in doc["pair"]["steps"]), doc["pair"]["steps"])
        frames = FRAME.findall(err)
        self.assertTrue(frames, "no progress frame on the terminal: %r" % err[-2000:])
        probes = [f for f in frames if "tcp rtt and bandwidth" in f]
        self.assertTrue(probes, frames)
        # A bar with percent, units done of 4 interface pairs, and an ETA in seconds once one is done.
        bar = re.compile(r"\[[#-]{20}\] +\d+%  \d/4  ETA (--|\d+s)$")
        self.assertTrue(all(bar.search(f) for f in probes), probes)
        self.assertTrue(any(re.search(r"ETA \d+s$", f) for f in probes), probes)
        self.assertTrue(any("slow0->slow0" in f for f in probes), probes)
        # The sweep's sizes, from the agent's progress notes: the size now running and an ETA.
        sweep = [f for f in frames if f.startswith("pair: allreduce fabkit-socket")]
        self.assertTrue(any(re.search(r" \d+ MiB  \[[#-]{20}\] +\d+%  [0-3]/4  ETA \d+s$", f)
                            for f in sweep), sweep)
        self.assertEqual(4, len(doc["pair"]["transports"][0]["sizes"]), doc["pair"]["transports"])
        # At most ~10 frames a second: the run lasts seconds, not minutes.
        self.assertLess(len(frames), 300, len(frames))
        # Erased when done: the last thing on the terminal is an erase, no frame left standing,
        # and nothing but frames and erases was written.
        self.assertTrue(err.endswith("\r\x1b[K"), repr(err[-200:]))
        self.assertEqual("", re.sub(r"\r\x1b\[K", "", FRAME.sub("", err)))

    def test_group_of_three_one_bar_over_the_ring_sizes(self):
        world = netns.NetnsWorld(hosts=3, decoys=False, controller=True).__enter__()
        self.addCleanup(world.close)
        rc, out, err = self.run_on_pty("--json", *LONG_SWEEP, world=world)
        doc = json.loads(self.check_report(rc, out))
        self.assertIn("pair_group", doc)
        frames = FRAME.findall(err)
        ring = [f for f in frames if f.startswith("group: ring 1/1 allreduce fabkit-socket across 3 hosts")]
        self.assertTrue(any(re.search(r" \d+ MiB  \[[#-]{20}\] +\d+%  [0-3]/4  ETA \d+s$", f) for f in ring),
                        frames)
        self.assertTrue(err.endswith("\r\x1b[K"), repr(err[-200:]))

    def test_ctrl_c_erases_the_drawn_line(self):
        """SIGINT while a bar is drawn: the stop handler erases it (common/terminal_line.h), so no
        half-drawn bar is left in front of the shell prompt, and the run dies by the signal."""
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        p = subprocess.Popen(self.argv("--json", *LONG_SWEEP), stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        err = b""
        deadline = time.monotonic() + 60
        try:
            while not FRAME.search(err.decode(errors="replace")) and time.monotonic() < deadline:
                ready, _, _ = select.select([master], [], [], 1.0)
                if ready:
                    err += os.read(master, 65536)
            self.assertTrue(FRAME.search(err.decode(errors="replace")), "no frame within 60 s: %r" % err)
            p.send_signal(signal.SIGINT)
            p.communicate(timeout=30)
            while True:
                ready, _, _ = select.select([master], [], [], 1.0)
                if not ready:
                    break
                try:
                    data = os.read(master, 65536)
                except OSError:
                    break
                if not data:
                    break
                err += data
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            os.close(master)
        self.assertEqual(p.returncode, -signal.SIGINT)
        self.assertTrue(err.endswith(b"\r\x1b[K"), repr(err[-200:]))

    def test_quiet_into_a_pipe(self):
        p = subprocess.run(self.argv(*SMALL), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=90)
        out = self.check_report(p.returncode, p.stdout)
        self.assertIn("fab0", out)  # the text report
        self.assertNotIn("\r", p.stderr)
        self.assertNotIn("\x1b", p.stderr)
        self.assertEqual("", p.stderr)

    def test_no_progress_on_a_terminal(self):
        rc, out, err = self.run_on_pty("--json", "--no-progress", *SMALL)
        json.loads(self.check_report(rc, out))
        self.assertEqual("", err)


if __name__ == "__main__":
    FABCHECK = os.path.abspath(sys.argv.pop(1))
    ok, why = netns.have_root_and_netns()
    if not ok:
        print("SKIP: " + why)
        sys.exit(77)
    unittest.main(verbosity=2)
