"""The fabtrain `--json` goldens: `eval` of a tiny random-init Llama (the Python tests' own
writer, tests/integration/trainer/tiny_inputs.py; CPU, deterministic), and `control list` /
`control cleanup` over a control directory holding hand-made registrations (a job registered by
another host, and one of this host whose pid and socket are gone), so no job has to run."""
import json
import os
import socket
import sys

import sysroots

sys.path.insert(0, os.path.join(sysroots.SOURCE_ROOT, "tests", "integration", "trainer"))
import tiny_inputs  # noqa: E402

# Above any pid_max Linux allows (2^22), so never a live process.
DEAD_PID = 99999999


def tiny_model(path):
    tiny_inputs.write_inputs(path, 4)


def control_dir(path):
    """other-node.json: a job on host `other-node`; gone.json: this host, pid and socket gone."""
    os.makedirs(path)
    regs = {"other-node": {"host": "other-node", "pid": 4242},
            "gone": {"host": socket.gethostname(), "pid": DEAD_PID}}
    for job, r in regs.items():
        with open(os.path.join(path, job + ".json"), "w") as f:
            json.dump({"protocol": 1, "job": job, "pid": r["pid"], "host": r["host"],
                       "socket": os.path.join(path, job + ".sock"),
                       "output_dir": "/scratch/runs/" + job, "started_unix_s": 1764000000.5}, f)


EVAL = ["eval", "--json", "--model", "tiny/model", "--data", "tiny/train.jsonl", "--max-length", "16"]
CONTROL_ENV = {"FABTRAIN_CONTROL_DIR": "{tmp}/control"}

FABTRAIN_CASES = [
    {"name": "fabtrain-eval-tiny", "binary": "fabtrain", "schema": "eval.schema.json",
     "setup": {"tiny": tiny_model}, "args": EVAL},
    {"name": "fabtrain-eval-no-packing", "binary": "fabtrain", "schema": "eval.schema.json",
     "setup": {"tiny": tiny_model}, "args": EVAL + ["--no-packing", "--batch-size", "3"]},
    {"name": "error-fabtrain-eval-no-model", "binary": "fabtrain", "schema": "eval.schema.json",
     "args": ["eval", "--json", "--model", "nomodel", "--data", "train.jsonl"]},
    {"name": "fabtrain-control-list", "binary": "fabtrain", "schema": "control.schema.json",
     "setup": {"control": control_dir}, "env": CONTROL_ENV, "args": ["control", "list", "--json"]},
    {"name": "fabtrain-control-list-empty", "binary": "fabtrain", "schema": "control.schema.json",
     "setup": {"control": os.makedirs}, "env": CONTROL_ENV, "args": ["control", "list", "--json"]},
    {"name": "fabtrain-control-cleanup", "binary": "fabtrain", "schema": "control.schema.json",
     "setup": {"control": control_dir}, "env": CONTROL_ENV,
     "args": ["control", "cleanup", "--json"]},
]
