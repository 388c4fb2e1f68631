"""fabtrain ranks as plain processes with a launcher's environment (torchrun-style or RANK/
WORLD_SIZE), each with its own stdout/stderr files: for the timeout and torchrun-attempt tests."""
import os
import socket
import subprocess


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def train_args(fabtrain, d, out, steps, timeout_ms=30000, device="cpu"):
    return [fabtrain, "--model", os.path.join(d, "model"), "--data", os.path.join(d, "train.jsonl"),
            "--output", os.path.join(d, out), "--max-length", "16", "--max-steps", str(steps),
            "--lr", "3e-3", "--micro-batch-size", "1", "--log-every", "1", "--no-control",
            "--rendezvous-timeout-ms", "30000", "--collective-timeout-ms", str(timeout_ms),
            # Gloo ranks on CPU by default, also on a machine with a GPU (--device auto would take it)
            "--device", device]


class Rank:
    def __init__(self, args, env, log_stem):
        self.out_path, self.err_path = log_stem + ".out", log_stem + ".err"
        with open(self.out_path, "w") as o, open(self.err_path, "w") as e:
            self.p = subprocess.Popen(args, env=env, stdout=o, stderr=e)

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def stdout(self):
        with open(self.out_path) as f:
            return f.read()


def rank_env(rank, world, port, extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TORCHELASTIC_", "SLURM_", "OMPI_")) and
           k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env.update({"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
                "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                "OMP_NUM_THREADS": "1"})
    env.update(extra or {})
    return env
