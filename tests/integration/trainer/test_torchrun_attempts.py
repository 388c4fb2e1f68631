"""fabtrain under a torchrun-style agent store that outlives the attempts: the store server is
torch's own TCPStore from the wheel, held by this script for the whole job as torchrun's agent
holds it (torch 2.13 dynamic_rendezvous: one server per agent, reused on every restart; the
workers get TORCHELASTIC_USE_AGENT_STORE=True and no per-attempt prefix from torch).

  attempt 0: ranks 0 and 1 train 2 steps and exit 0; their keys stay in the store.
  attempt 1: rank 1 starts first and waits 3 s before rank 0 (as a restarted job's ranks come up
             in any order), with TORCHELASTIC_RESTART_COUNT 0 on rank 1 and 1 on rank 0 (agents
             count their own restarts: pytorch#135712). Rank 1 must not read attempt 0's keys
             (Gloo's peer addresses, NCCL's unique id): both exit 0, each attempt's keys under
             its own prefix, which the script reads back from the store.
Run by the wheel's Python (FABKIT_PYTHON)."""
import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rank_procs import Rank, free_port, rank_env, train_args  # noqa: E402
from tiny_inputs import write_inputs  # noqa: E402

from torch.distributed import TCPStore  # noqa: E402


def torchrun_env(rank, port, restart_count):
    return rank_env(rank, 2, port, {"TORCHELASTIC_RUN_ID": "fabtrain-test",
                                    "TORCHELASTIC_USE_AGENT_STORE": "True",
                                    "TORCHELASTIC_RESTART_COUNT": str(restart_count),
                                    "TORCHELASTIC_MAX_RESTARTS": "3"})


def finish(ranks, what, timeout_s=150):
    deadline = time.time() + timeout_s
    for i, r in enumerate(ranks):
        try:
            r.p.wait(timeout=max(1, deadline - time.time()))
        except Exception:
            for q in ranks:
                q.p.kill()
            raise AssertionError("%s: rank %d still running after %d s:\n%s" % (what, i, timeout_s, r.stderr()[-3000:]))
    for i, r in enumerate(ranks):
        assert r.p.returncode == 0, "%s: rank %d exit %d:\n%s" % (what, i, r.p.returncode, r.stderr()[-3000:])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fabtrain", required=True)
    a = p.parse_args()
    d = tempfile.mkdtemp(prefix="fabtrain-attempts-")
    port = free_port()
    # What torchrun's agent runs (dynamic_rendezvous._create_tcp_store_server).
    server = TCPStore("127.0.0.1", port, is_master=True, multi_tenant=True, wait_for_workers=False)
    try:
        write_inputs(d, 200)
        attempt0 = [Rank(train_args(a.fabtrain, d, "out", 2), torchrun_env(r, port, 0),
                         os.path.join(d, "a0-rank%d" % r)) for r in range(2)]
        finish(attempt0, "attempt 0")
        prefix0 = "fabtrain/attempt-1"
        assert "this attempt's keys under " + prefix0 in attempt0[0].stderr() + attempt0[0].stdout(), \
            attempt0[0].stderr()[-2000:]

        rank1 = Rank(train_args(a.fabtrain, d, "out1", 2), torchrun_env(1, port, 0), os.path.join(d, "a1-rank1"))
        time.sleep(3)
        rank0 = Rank(train_args(a.fabtrain, d, "out1", 2), torchrun_env(0, port, 1), os.path.join(d, "a1-rank0"))
        finish([rank0, rank1], "attempt 1")
        prefix1 = "fabtrain/attempt-2"
        # Rank 0 logs for the job (fabtrain's other ranks log only warnings and errors).
        assert "this attempt's keys under " + prefix1 in rank0.stderr() + rank0.stdout(), rank0.stderr()[-2000:]
        # Both attempts' keys are in the one store, each under its own prefix.
        assert server.get("fabtrain/join/attempts") == b"2", server.get("fabtrain/join/attempts")
        for prefix in (prefix0, prefix1):
            for r in range(2):
                key = "%s/host/%d" % (prefix, r)
                assert server.check([key]), "no %s in the store" % key
        print("PASS: attempt 0 under %s, attempt 1 under %s" % (prefix0, prefix1))
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
