"""scripts/gpu-check's summary: summary.json (everything) and summary.txt (what a person reads)."""
import json
import os
import shutil
import sys
import tarfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "trainer"))
import trace_summary  # noqa: E402  (bench/trainer: the fabtrain bench's trace of one step)

FAILING = ("failed", "timeout", "not_run")
SUMMARY_FILES = ("summary.json", "summary.txt")
PACKED = "gpu-check-files.tar.gz"


def make(machine, done, budget, args):
    elapsed = round(time.monotonic() - budget.start, 1)
    failed = [s["name"] for s in done if s["status"] in FAILING]
    # A skipped step is not a failure (no --debs given, a container that cannot make network
    # namespaces), but "OK" alone would hide that it did not run: the headline names them.
    skipped = [s["name"] for s in done if s["status"] == "skipped"]
    return {
        "schema": "fabkit.gpu_check/1",
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine,
        "options": {"quick": args.quick, "budget_s": args.budget_s, "jobs": args.jobs, "build_dir": args.build_dir,
                    "tests": args.tests},
        "elapsed_s": elapsed,
        "within_budget": elapsed <= args.budget_s,
        "ok": not failed,
        "failed": failed,
        "skipped": skipped,
        "steps": done,
    }


def _figure_lines(step):
    f = step.get("figures")
    if not f:
        return []
    if step["name"] == "gpu-tests":
        lines = ["    " + ", ".join(f"{k} {v}" for k, v in f.items())]
        for t in step.get("tests", []):
            if t["status"] != "passed":
                lines.append(f"    {t['status']:<8} {t['name']}: {t.get('reason', '')}"[:220])
        return lines
    if step["name"].startswith("train-"):
        # A test's few recorded figures (the worst loss and weight differences): one line.
        return ["    " + ", ".join(f"{k} {v}" for k, v in sorted(f.items()))]
    rest = {k: v for k, v in f.items() if k != "trace"}
    if isinstance(rest.get("rounds"), list):
        # The per-step losses of the loss guard stay in summary.json; the text keeps the figures.
        # One line a round, so the versions and the SDPA kernels stay inside the text's 60 lines.
        rest["rounds"] = [json.dumps({who: ({k: v for k, v in x.items() if k != "losses"} if isinstance(x, dict) else x)
                                      for who, x in r.items()}, sort_keys=True) for r in rest["rounds"]]
    lines = ["    " + l for l in json.dumps(rest, indent=1, sort_keys=True).splitlines()[:60]]
    if f.get("trace"):
        lines += ["    " + l for l in trace_summary.render(f["trace"]).splitlines()]
    return lines


def headline(doc):
    if not doc["ok"]:
        return "FAILED: " + ", ".join(doc["failed"])
    skipped = doc.get("skipped") or []
    return "OK" + (f", {len(skipped)} step(s) skipped (reasons below): {', '.join(skipped)}" if skipped else "")


def text(doc):
    m = doc["machine"]
    out = [f"fabkit gpu-check {doc['finished_at']}: {headline(doc)}",
           f"machine: {m.get('hostname')}, {m.get('cores')} cores, {len(m.get('gpus', []))} GPU(s)"
           + (f", driver {m.get('driver')}" if m.get("driver") else f" ({m.get('gpu_reason')})"),
           f"torch {m.get('torch')} (CUDA {m.get('torch_cuda')}, available {m.get('cuda_available')}), "
           f"NCCL {m.get('nccl')}, {m.get('cmake')}, {m.get('gxx')}"]
    out += [f"  {g}" for g in m.get("gpus", [])]
    if doc.get("packed"):
        out.append(f"logs and figure files: {doc['packed']} beside this summary")
    out.append(f"elapsed {doc['elapsed_s']} s of {doc['options']['budget_s']:.0f} s"
               f"{'' if doc['within_budget'] else ' (OVER BUDGET)'}")
    for s in doc["steps"]:
        secs = f" {s['seconds']} s" if "seconds" in s else ""
        out.append(f"  {s['status']:<8} {s['name']}{secs}" + (f": {s['reason']}" if s.get("reason") else ""))
        if s.get("note"):
            out.append(f"    note: {s['note']}")
        out += _figure_lines(s)
        if s["status"] in FAILING and s.get("tail"):
            out += ["    | " + l for l in s["tail"].splitlines()[-12:]]
    return "\n".join(out) + "\n"


def write(out_dir, doc):
    # Written to a temporary name and renamed: a killed run never leaves half a summary.
    for name, body in (("summary.json", json.dumps(doc, indent=1) + "\n"), ("summary.txt", text(doc))):
        tmp = os.path.join(out_dir, name + ".tmp")
        with open(tmp, "w") as f:
            f.write(body)
        os.replace(tmp, os.path.join(out_dir, name))


def pack(out_dir):
    """Everything in out_dir but the summary into one gpu-check-files.tar.gz, the originals removed:
    a caller that brings back only a few files (the project's device tool returns 8) then gets
    the summary and every log. Returns the archive's path."""
    archive = os.path.join(out_dir, PACKED)
    members = sorted(n for n in os.listdir(out_dir) if n not in SUMMARY_FILES + (PACKED, PACKED + ".tmp"))
    tmp = archive + ".tmp"
    with tarfile.open(tmp, "w:gz") as t:
        for n in members:
            t.add(os.path.join(out_dir, n), arcname=n)
    os.replace(tmp, archive)
    for n in members:
        path = os.path.join(out_dir, n)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    return archive
