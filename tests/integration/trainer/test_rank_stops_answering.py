"""A rank that stops answering (SIGSTOP) mid-training: every other rank exits non-zero within
the collective timeout with fabtrain's error naming the stopped rank, its host and pid. Real
fabtrain processes on 127.0.0.1.
  case 1: rank 1 of 3 stops (rank 0 serves the store): ranks 0 and 2 name rank 1.
  case 2: rank 0 of 3 stops (it serves the store): ranks 1 and 2 say the store's host stopped.
Gloo on the CPU by default. --nccl: the same two cases with 2 ranks on NCCL on the GPU, where
fabtrain's deadline must speak before ProcessGroupNCCL's watchdog aborts the process. With one GPU
both ranks share it, each made a host of its own for NCCL (NCCL_HOSTID; NCCL refuses two ranks of
one host on one GPU) and joined over NCCL's socket transport on lo. Without a GPU: exit 77 (skip),
saying so."""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "netns"))
import machine  # noqa: E402
from rank_procs import Rank, free_port, rank_env, train_args  # noqa: E402
from tiny_inputs import write_inputs  # noqa: E402

TIMEOUT_MS = 3000
# On the GPU the ranks share it with gpu-check's other GPU tests running beside them: a longer
# deadline, still far below the watchdog fabtrain sets (the deadline + max(deadline, 60 s): 70 s).
NCCL_TIMEOUT_MS = 10000
SKIP = 77  # ctest's SKIP_RETURN_CODE for this test


class Refused(Exception):
    """NCCL would not make two ranks on one shared GPU: what it said (a skip, not a failure)."""


def nccl_env(rank, gpus):
    """One rank per "host" for NCCL: its own GPU where there are two, else the shared one under a
    host id of its own; P2P and SHM off (they would need one real host), sockets on lo."""
    return {"CUDA_VISIBLE_DEVICES": gpus[rank % len(gpus)], "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
            "NCCL_HOSTID": "fabkit-stop-rank%d" % rank, "NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1",
            "NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "lo"}


def nccl_refusal(text):
    # Only what NCCL says at communicator creation: a failure later in training is a failure.
    init = re.compile(r"(?i)duplicate gpu|(ncclCommInit\w*|nccl\S* (init|bootstrap)).*(error|fail|invalid)")
    lines = [l for l in text.splitlines() if init.search(l)]
    return lines[-1].strip()[:400] if lines else None


def nccl_logs(out_dir, world):
    """The NCCL log fabtrain has each rank write (OUTPUT/nccl/rank-R.log), as far as it exists."""
    text = []
    for r in range(world):
        try:
            with open(os.path.join(out_dir, "nccl", "rank-%d.log" % r), errors="replace") as f:
                text.append(f.read()[-20000:])
        except OSError:
            pass
    return "\n".join(text)


def steps_logged(out_dir):
    try:
        with open(os.path.join(out_dir, "metrics.jsonl")) as f:
            return sum(1 for line in f if '"step"' in line)
    except OSError:
        return 0


def run_case(fabtrain, d, stopped, world=3, gpus=None):
    port = free_port()
    out = "out-%d" % stopped
    timeout_ms = NCCL_TIMEOUT_MS if gpus else TIMEOUT_MS
    args = train_args(fabtrain, d, out, 100000, timeout_ms, device="cuda" if gpus else "cpu")
    ranks = [Rank(args, rank_env(r, world, port, nccl_env(r, gpus) if gpus else None),
                  os.path.join(d, "case%d-rank%d" % (stopped, r)))
             for r in range(world)]
    try:
        # Rank 0 writes the metrics: wait for two steps, so every rank is inside the loop.
        deadline = time.time() + 180
        while steps_logged(os.path.join(d, out)) < 2:
            if time.time() > deadline or any(r.p.poll() is not None for r in ranks):
                logs = "\n".join("rank %d: %s" % (i, q.stderr()[-1500:]) for i, q in enumerate(ranks))
                # NCCL's own words go to each rank's NCCL_DEBUG_FILE (fabtrain sets it), not stderr.
                said = nccl_refusal(logs + "\n" + nccl_logs(os.path.join(d, out), world)) \
                    if gpus and len(set(gpus)) < world else None
                if said and time.time() <= deadline:
                    raise Refused(said)
                raise AssertionError("training did not start:\n" + logs)
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
            assert "did not complete within %d ms (--collective-timeout-ms)" % timeout_ms in err, err[-2000:]
            if stopped == 0:
                assert "the rendezvous store did not answer" in err, err[-2000:]
            else:
                # Stopped outside the collectives (did not arrive), or while blocked in one
                # long enough to have posted it (reached it, never timed out there).
                who = "rank %d (%s pid %d) " % (stopped, host, victim.p.pid)
                named = [who + "did not arrive", who + "reached this collective but did not time out"]
                assert any(n in err for n in named), "rank %d names neither %r:\n%s" % (i, named, err[-2000:])
        # The timeout, the naming's grace (750 ms) and the time to reach the next collective.
        assert elapsed < timeout_ms / 1000 + 10, "the others took %.1f s" % elapsed
        print("case stopped=%d (%s): others exited 3 after %.1f s naming rank %d" % (
            stopped, "NCCL" if gpus else "Gloo", elapsed, stopped))
    finally:
        for r in ranks:
            if r.p.poll() is None:
                r.p.kill()
                r.p.wait()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fabtrain", required=True)
    p.add_argument("--nccl", action="store_true", help="2 ranks on NCCL on the GPU(s) instead of 3 on Gloo")
    a = p.parse_args()
    gpus, world = None, 3
    if a.nccl:
        # NVML's list (nvidia-smi), not CUDA's: the test makes no CUDA context beside the ranks'.
        gpus, why = machine.gpu_uuids()
        if not gpus:
            print("needs an NVIDIA GPU: " + why)
            sys.exit(SKIP)
        gpus, world = gpus[:2], 2
    d = tempfile.mkdtemp(prefix="fabtrain-stop-")
    try:
        write_inputs(d, 600)
        run_case(a.fabtrain, d, stopped=1, world=world, gpus=gpus)
        run_case(a.fabtrain, d, stopped=0, world=world, gpus=gpus)
    except Refused as e:
        print("two NCCL ranks on one GPU, each a host of its own (NCCL_HOSTID), were refused here: %s" % e)
        sys.exit(SKIP)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
