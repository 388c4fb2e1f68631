"""Shared helpers: run fabcheck with a clean environment and parse its JSON keeping key order."""
import atexit
import json
import os
import shutil
import subprocess
import tempfile


def empty_home():
    """A fresh empty HOME, removed when the test process exits."""
    home = tempfile.mkdtemp(prefix="fabkit-home-")
    atexit.register(shutil.rmtree, home, True)
    return home


def clean_env(extra=None):
    """The process environment minus NCCL/Gloo settings, with an empty HOME (no ~/.nccl.conf)."""
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("NCCL_") or k.startswith("TORCH_NCCL_") or k.startswith("GLOO_")
                   or k in ("MASTER_ADDR", "MASTER_PORT"))}
    env["HOME"] = empty_home()
    env.update(extra or {})
    return env


def run(argv, env=None, prefix=None, timeout=60):
    cmd = (prefix or []) + argv
    p = subprocess.run(cmd, env=env if env is not None else clean_env(), capture_output=True,
                       text=True, timeout=timeout)
    return p


def parse(stdout):
    pairs = json.loads(stdout, object_pairs_hook=lambda kv: kv)  # ordered (key, value) lists
    return pairs, json.loads(stdout)


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)
