#!/usr/bin/env python3
"""`fabcheck node --active` black-box: the real binary on this machine. Whether a GPU exists is
asked of nvidia-smi and of the report's own NVML section, never assumed: without one the check
must say unavailable (an info finding, nothing that changes the exit code); with one it must run
and measure every GPU. The document validates against node.schema.json either way, and the flags
are checked (--active with --sysroot, --active-budget-s without --active or out of range: exit 2).
usage: node_active_test.py FABCHECK SOURCE_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(sys.argv[2], "tests", "support"))
from fabcheck_run import check, parse, run  # noqa: E402

try:
    from json_schemas import validate_doc  # noqa: E402
except ImportError as e:  # the GPU machine's image may lack python3-jsonschema
    print(f"note: {e}: documents not checked against docs/schema (docs_json_schema checks them elsewhere)")

    def validate_doc(doc, schema_name):
        pass

FABCHECK = sys.argv[1]


def smi_gpus():
    if shutil.which("nvidia-smi") is None:
        return 0
    p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    return sum(1 for line in p.stdout.splitlines() if line.startswith("GPU ")) if p.returncode == 0 else 0


def cuda_hides_all():
    v = os.environ.get("CUDA_VISIBLE_DEVICES")
    return v is not None and v.strip() in ("", "-1")


def test_active_json():
    p = run([FABCHECK, "node", "--json", "--active"], timeout=900)
    check(p.returncode in (0, 1), f"exit {p.returncode}, stderr: {p.stderr[-2000:]}")
    pairs, doc = parse(p.stdout)
    validate_doc(doc, "node.schema.json")
    check("gpu_active" in doc, "--active but no gpu_active section")
    s = doc["gpu_active"]
    ours = [f for f in doc["findings"] if f["code"].startswith("gpu_active.")]
    worst = "fail" if any(f["severity"] == "fail" for f in doc["findings"]) else \
        "warn" if any(f["severity"] == "warn" for f in doc["findings"]) else "info"
    check(p.returncode == (0 if worst == "info" else 1), f"exit {p.returncode} vs worst finding {worst}")
    gpus = 0 if cuda_hides_all() else smi_gpus()
    if gpus == 0 or doc["gpus"]["count"] == 0:
        check(s["status"] == "unavailable", f"no GPU here but status {s['status']}: {s['reason']}")
        check(s["reason"], "unavailable without a reason")
        check([f["code"] for f in ours] == ["gpu_active.unavailable"], f"findings {ours}")
        check(all(f["severity"] == "info" for f in ours), "no GPU must be an info fact")
        print(f"note: no GPU: {s['reason']}")
        return
    check(s["status"] == "ran", f"{gpus} GPU(s) but status {s['status']} ({s['error']}): {s['reason']}")
    check(len(s["gpus"]) == gpus or os.environ.get("CUDA_VISIBLE_DEVICES"),
          f"{len(s['gpus'])} GPUs measured, nvidia-smi lists {gpus}")
    for g in s["gpus"]:
        names = {f["name"]: f for f in g["figures"]}
        for n in ("gemm_bf16", "device_copy", "h2d", "d2h"):
            check(n in names and names[n]["measured"] and names[n]["measured"] > 0, f"GPU {g['index']} {n}: {names.get(n)}")
        print(f"measured: GPU {g['index']} {g['name']} {g['pcie']['under_load']}: " +
              ", ".join(f"{f['name']} {f['measured']:.1f} {f['unit']} ({(f['fraction'] or 0) * 100:.0f}%)"
                        for f in g["figures"] if f["measured"] is not None))
    if len(s["gpus"]) >= 2:
        check([r["algorithm"] for r in s["allreduce"]] == ["default", "Ring"], f"all-reduce runs {s['allreduce']}")
        for r in s["allreduce"]:
            check(r["status"] == "ok" and r["busbw_gb_per_s"] > 0, f"all-reduce {r}")
            print(f"measured: all-reduce {r['algorithm']} busbw {r['busbw_gb_per_s']:.1f} GB/s, expected {r['expected']}")
    print(f"measured: gpu_active.elapsed_ms {s['elapsed_ms']:.0f}")


def test_plain_node_has_no_active_section():
    p = run([FABCHECK, "node", "--json"])
    check("gpu_active" not in json.loads(p.stdout), "plain fabcheck node must not run the active check")


def test_text():
    p = run([FABCHECK, "node", "--active", "--no-progress"], timeout=900)
    check(p.returncode in (0, 1), f"exit {p.returncode}: {p.stderr[-1000:]}")
    check("active GPU check: " in p.stdout, f"no active check in the text:\n{p.stdout[-2000:]}")


def test_flags():
    root = tempfile.mkdtemp(prefix="fabkit-active-")
    try:
        flags_refused(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def flags_refused(root):
    os.makedirs(os.path.join(root, "sys"))
    for argv, says in (
            (["--active", "--sysroot", root], "--active measures this machine's GPUs and cannot run on a --sysroot tree"),
            (["--active-budget-s", "30"], "--active-budget-s requires --active"),
            (["--active", "--active-budget-s", "5"], "--active-budget-s"),
    ):
        p = run([FABCHECK, "node", "--json"] + argv)
        check(p.returncode == 2, f"{argv}: exit {p.returncode}, {p.stdout}")
        msg = json.loads(p.stdout)["error"]["message"]
        check(says in msg, f"{argv}: '{msg}' should say '{says}'")
        validate_doc(json.loads(p.stdout), "error.schema.json")


for t in (test_flags, test_plain_node_has_no_active_section, test_active_json, test_text):
    t()
    print(f"ok {t.__name__}")
