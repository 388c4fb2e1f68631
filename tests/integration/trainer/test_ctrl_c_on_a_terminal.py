#!/usr/bin/env python3
"""One Ctrl-C on the terminal stops a `fabtrain --nproc 2` job with a checkpoint; it is not an abort.

The terminal sends SIGINT to the whole foreground process group, so the ranks get it from the
terminal as well as from their --nproc parent, which must not forward it again (a second SIGINT
means abort). A real pseudo-terminal: fabtrain runs as a session leader on the pty's slave side,
and the test types ^C into the master, so the kernel's line discipline generates the signal.
"""
import argparse, json, os, pty, select, shutil, subprocess, sys, tempfile, time, unittest

from tiny_inputs import write_inputs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
from json_schemas import validate_doc  # noqa: E402

FABTRAIN = None


def read_until(fd, pattern, deadline):
    out = b""
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the slave side closed (the job ended)
                return out, True
            if not chunk:
                return out, True
            out += chunk
            if pattern and pattern in out:
                return out, False
    return out, False


class CtrlC(unittest.TestCase):
    def test_one_ctrl_c_stops_every_rank_with_a_checkpoint(self):
        d = tempfile.mkdtemp(prefix="fabtrain-ctrlc-")
        try:
            write_inputs(d, 40)
            out = os.path.join(d, "out")
            argv = [FABTRAIN, "--model", os.path.join(d, "model"), "--data", os.path.join(d, "train.jsonl"),
                    "--output", out, "--max-length", "16", "--max-steps", "100000", "--lr", "3e-3", "--device",
                    "cpu", "--nproc", "2", "--micro-batch-size", "2", "--collective-timeout-ms", "20000"]
            env = dict(os.environ, FABTRAIN_CONTROL_DIR=os.path.join(d, "ctl"))
            pid, fd = pty.fork()  # the child: a new session whose controlling terminal is the pty
            if pid == 0:
                os.execve(FABTRAIN, argv, env)
            deadline = time.time() + 120
            seen, ended = read_until(fd, b"step 3/", deadline)
            self.assertFalse(ended, seen.decode(errors="replace")[-2000:])
            self.assertIn(b"step 3/", seen)
            self.check_control_json(env)
            os.write(fd, b"\x03")  # ^C: the line discipline signals the foreground process group
            rest, _ = read_until(fd, None, time.time() + 60)
            _, status = os.waitpid(pid, 0)
            text = (seen + rest).decode(errors="replace")
            self.assertEqual(os.waitstatus_to_exitcode(status), 0, text[-3000:])
            self.assertIn("stop requested (SIGINT)", text)
            self.assertNotIn("abort requested", text)
            cps = [n for n in os.listdir(out) if n.startswith("checkpoint-")]
            self.assertEqual(len(cps), 1, text[-3000:])
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def check_control_json(self, env):
        """While the job runs: `control list --json` and `control status out --json` (the job id is
        the output directory's name) satisfy docs/schema/control.schema.json and name the job."""
        docs = {}
        for args in (["list"], ["status", "out"]):
            r = subprocess.run([FABTRAIN, "control", *args, "--json"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            docs[args[0]] = json.loads(r.stdout)
            validate_doc(docs[args[0]], "control.schema.json")
        self.assertEqual([(j["job"], j["state"]) for j in docs["list"]["jobs"]], [("out", "running")])
        status = docs["status"]
        self.assertEqual((status["ok"], status["job"], status["command"]), (True, "out", "status"))
        self.assertGreaterEqual(status["status"]["step"], 3)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--fabtrain", required=True)
    a, rest = p.parse_known_args()
    FABTRAIN = a.fabtrain
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
