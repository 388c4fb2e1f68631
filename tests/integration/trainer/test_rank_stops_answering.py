"""A rank that stops answering (SIGSTOP) mid-training: every other rank exits non-zero within
the collective timeout with fabtrain's error naming the stopped rank, its host and pid. Real
fabtrain processes over Gloo on 127.0.0.1.
  case 1: rank 1 of 3 stops (rank 0 serves the store): ranks 0 and 2 name rank 1.
  case 2: rank 0 of 3 stops (it serves the store): ranks 1 and 2 say the store's host stopped."""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rank_procs import Rank, free_port, rank_env, train_args  # noqa: E402
from tiny_inputs import write_inputs  # noqa: E402

TIMEOUT_MS = 3000


def steps_logged(out_dir):
    try:
        with open(os.path.join(out_dir, "metrics.jsonl")) as f:
            return sum(1 for line in f if '"step"' in line)
    except OSError:
        return 0


def run_case(fabtrain, d, stopped, world=3):
    port = free_port()
    out = "out-%d" % stopped
    ranks = [Rank(train_args(fabtrain, d, out, 100000, TIMEOUT_MS),
                  rank_env(r, world, port), os.path.join(d, "case%d-rank%d" % (stopped, r)))
             for r in range(world)]
    try:
        # Rank 0 writes the metrics: wait for two steps, so every rank is inside the loop.
        deadline = time.time() + 180
        while steps_logged(os.path.join(d, out)) < 2:
            if time.time() > deadline or any(r.p.poll() is not None for r in ranks):
                raise AssertionError("training did not start: " + ranks[0].stderr()[-2000:])
            time.sleep(0.2)
        victim = ranks[stopped]
        os.kill(victim.p.pid, signal.SIGSTOP)
        t0 = time.time()
        others = [r for i, r in enumerate(ranks) if i != stopped]
        for r in others:
            try:
                r.p.wait(timeout=max(1, t0 + 60 - time.time()))
            except subprocess.TimeoutExpired:
                raise AssertionError("stopped rank %d: a rank still runs 60 s later:\n%s" % (
                    stopped, "\n".join("rank %d: %s" % (i, q.stderr()[-1500:]) for i, q in enumerate(ranks))))
        elapsed = time.time() - t0
        host = socket.gethostname()
        for i, r in enumerate(ranks):
            if r is victim:
                continue
            err = r.stderr()
            assert r.p.returncode == 3, "rank %d exit %s: %s" % (i, r.p.returncode, err[-2000:])
            assert "did not complete within %d ms (--collective-timeout-ms)" % TIMEOUT_MS in err, err[-2000:]
            if stopped == 0:
                assert "the rendezvous store did not answer" in err, err[-2000:]
            else:
                named = "rank %d (%s pid %d) did not arrive" % (stopped, host, victim.p.pid)
                assert named in err, "rank %d does not name %r:\n%s" % (i, named, err[-2000:])
        # The timeout, the naming's grace (750 ms) and the time to reach the next collective.
        assert elapsed < TIMEOUT_MS / 1000 + 10, "the others took %.1f s" % elapsed
        print("case stopped=%d: others exited 3 after %.1f s naming rank %d" % (stopped, elapsed, stopped))
    finally:
        for r in ranks:
            if r.p.poll() is None:
                r.p.kill()
                r.p.wait()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fabtrain", required=True)
    a = p.parse_args()
    d = tempfile.mkdtemp(prefix="fabtrain-stop-")
    try:
        write_inputs(d, 600)
        run_case(a.fabtrain, d, stopped=1)
        run_case(a.fabtrain, d, stopped=0)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
