"""gpu-check's node-active step judged from what `fabcheck node --active --json` left: its exit,
whether it was killed, and its report. Pure (no I/O), so every outcome is tested on a machine
without a GPU (tests/integration/gpu_check/test_gpu_check.py, NodeActive).

fabcheck exits 1 for findings at warn or fail, which on a healthy node is still a check that ran;
but a check that stopped part-way also exits 1 (its findings say so), and that must not read as a
pass: the first --active run on a GPU is exactly where a broken bench child would show."""

FIGURE_KEYS = ("name", "measured", "expected", "fraction")
ALLREDUCE_KEYS = ("algorithm", "status", "busbw_gb_per_s", "fraction", "reason")


def figures_of(report):
    s = (report or {}).get("gpu_active") or {}
    return {"status": s.get("status"), "error": s.get("error"), "stopped_at": s.get("stopped_at"),
            "elapsed_ms": s.get("elapsed_ms"), "reason": s.get("reason"), "skipped": s.get("skipped") or [],
            "gpus": [{"index": g.get("index"), "name": g.get("name"),
                      "figures": [{k: f.get(k) for k in FIGURE_KEYS} for f in g.get("figures", [])]}
                     for g in s.get("gpus", [])],
            "allreduce": [{k: x.get(k) for k in ALLREDUCE_KEYS} for x in s.get("allreduce", [])],
            # What fabcheck judged at warn or fail (exit 1): the codes a reader looks up.
            "findings": [f"{f.get('severity')} {f.get('code')} {f.get('subject')}"
                         for f in (report or {}).get("findings", [])
                         if str(f.get("code", "")).startswith("gpu_active.") and f.get("severity") in ("warn", "fail")]}


def judge(rc, timed_out, report, report_error, machine_has_gpu):
    """Returns (status, reason, figures) for the step. report: the parsed JSON or None;
    report_error: why it could not be read."""
    if timed_out:
        # First: a killed fabcheck leaves an empty or partial file, which is not the reason.
        return "timeout", "fabcheck node --active ran past its share of the budget (killed)", \
            figures_of(report) if report else None
    if report is None:
        return "failed", f"no JSON report ({report_error}); exit {rc}", None
    f = figures_of(report)
    if rc not in (0, 1):
        return "failed", f"exit {rc}", f
    if f["status"] == "unavailable" or not report.get("gpu_active"):
        why = f"gpu_active unavailable: {f['reason']}" if report.get("gpu_active") else "no gpu_active section"
        return ("failed" if machine_has_gpu else "skipped"), why, f
    if f["status"] != "ran":
        at = f" at {f['stopped_at']}" if f["stopped_at"] else ""
        return "failed", f"gpu_active {f['status']} ({f['error']}{at}): {f['reason']}", f
    if not f["gpus"]:
        return "failed", "gpu_active ran but measured no GPU", f
    unmeasured = [f"GPU {g['index']} {x['name']}" for g in f["gpus"] for x in g["figures"] if x["measured"] is None]
    if unmeasured:
        return "failed", "not measured: " + ", ".join(unmeasured), f
    bad = [f"{x['algorithm']} {x['status']}: {x['reason']}" for x in f["allreduce"] if x["status"] != "ok"]
    if bad:
        return "failed", "all-reduce " + "; ".join(bad), f
    return "passed", None, f
