"""scripts/gpu-check's train-* steps (issue #38, item 6): what fabtrain does that had run only on a
CPU, each a test of tests/integration/trainer/fabtrain_on_device_test.cc run on the GPU
(FABTRAIN_TEST_DEVICE=cuda: the ranks share one GPU over NCCL, each a host of its own).

Without a GPU each step runs its test on the CPU (Gloo) instead, as a rehearsal of the step's
plumbing, and is reported skipped, naming the absent GPU and what the rehearsal gave: a green CPU
run is never shown as a GPU result. A rehearsal that fails is a failure.

The judgement (judge) is pure: it reads the test's exit, its gtest JSON report and its output."""
import concurrent.futures
import json
import os

from gpu_check import steps, test_runner

SUITE = "OnDevice"

# (step, the test, its cap in seconds, what passing shows). The caps are ~4x the estimate of a
# tiny model's fabtrain processes on a GPU (each ~5-10 s to load LibTorch, make a CUDA context and,
# for two ranks, an NCCL communicator over sockets); docs/gpu-node.md has the estimates.
CHECKS = (
    ("train-two-ranks-one-gpu", "TwoRanksSharingOneDeviceMatchOneRankStepByStep", 120,
     "2 ranks sharing one GPU (NCCL; all-gather prefetch and reduce-scatter) matched the 1-rank run "
     "step by step, fp32, same data"),
    ("train-checkpoint-resume", "ShardedCheckpointSavedAndResumedEqualsTheUninterruptedRun", 150,
     "a 2-rank sharded checkpoint saved on the GPU and resumed there repeated the uninterrupted run"),
    ("train-offload", "OffloadedActivationsRepeatRecomputeAlone", 90,
     "--offload-activations in real steps (pinned host copies, side stream) repeated recompute alone"),
    ("train-fp16", "Float16TracksFloat32AndItsLossScaleBacksOffOnOverflow", 120,
     "float16 tracked fp32 within 1e-2, and overflowed steps were skipped at a halving loss scale"),
    ("train-pipeline", "PipelineTwoStagesOnOneDeviceEqualOneProcess", 120,
     "the pipeline engine, 2 stages on one GPU, matched the 1-process run step by step"),
    ("train-pipeline-schedules", "PipelineSchedulesOnOneDeviceEqualOneProcess", 150,
     "zb-h1 (split backward) and interleaved-1f1b (2 chunks per rank), 2 ranks on one GPU, each "
     "matched the 1-process run step by step"),
)

# gtest's own keys in a JSON test case; every other key is a property the test recorded (a figure).
_GTEST_KEYS = {"name", "status", "result", "timestamp", "time", "classname", "failures", "file", "line",
               "value_param", "type_param"}


def test_binary(build_dir):
    return os.path.join(build_dir, "tests", "integration", "trainer", "fabtrain_integration_test")


def find_case(report, test):
    """The test case named SUITE.test in a gtest JSON report, or None."""
    for suite in (report or {}).get("testsuites", []):
        if suite.get("name") != SUITE:
            continue
        for case in suite.get("testsuite", []):
            if case.get("name") == test:
                return case
    return None


def judge(name, test, claim, rc, timed_out, cap_s, report, output, gpu, gpu_reason):
    """One train-* step's status from its run. Returns the step's fields (status, reason, note,
    figures) without name, seconds or log."""
    if timed_out:
        return {"status": "timeout", "reason": f"killed after {cap_s:.0f} s (its share of the budget)"}
    if report is None:
        return {"status": "failed",
                "reason": f"{SUITE}.{test}: no gtest report (exit {rc}): it crashed or did not start (see the log)"}
    case = find_case(report, test)
    if case is None:
        # gtest exits 0 when its filter matches nothing.
        return {"status": "failed", "reason": f"{SUITE}.{test} is not in the test binary (exit {rc}): nothing ran"}
    figures = {k: v for k, v in case.items() if k not in _GTEST_KEYS}
    where = "on the GPU" if gpu else "its CPU rehearsal (Gloo)"
    if rc != 0 or case.get("failures"):
        msgs = [f.get("failure", "") for f in case.get("failures", [])]
        first = msgs[0].strip().replace("\n", " | ") if msgs else f"exit {rc}"
        step = {"status": "failed", "reason": f"{where}: {first}"[:400]}
        if figures:
            step["figures"] = figures
        return step
    if case.get("result") == "SKIPPED":
        why = test_runner.skip_reason(output)
        if gpu and test_runner.ABSENT_GPU.search(why):
            return {"status": "failed", "reason": "skipped on a machine that has a GPU: " + why}
        return {"status": "skipped", "reason": why}
    if not gpu:
        return {"status": "skipped", "figures": figures,
                "reason": f"not run on a GPU ({gpu_reason or 'no GPU'}); its CPU rehearsal (Gloo) passed"}
    return {"status": "passed", "note": claim, "figures": figures}


def run_one(binary, check, out_dir, budget, gpu, gpu_reason):
    name, test, cap, claim = check
    cap_s = budget.cap(cap)
    if cap_s < 10:
        return {"name": name, "status": "not_run",
                "reason": f"the budget left ({max(0, budget.left_s()):.0f} s) is below the 10 s a run needs"}
    report_path = os.path.join(out_dir, name + ".gtest.json")
    if os.path.exists(report_path):
        os.remove(report_path)  # an earlier run's report must not stand in for this one's
    env = dict(os.environ, FABTRAIN_TEST_DEVICE="cuda" if gpu else "cpu")
    r = steps.run_command(name, [binary, f"--gtest_filter={SUITE}.{test}", f"--gtest_output=json:{report_path}"],
                          out_dir, cap_s, env=env)
    report = None
    try:
        with open(report_path) as f:
            report = json.load(f)
    except (OSError, ValueError):
        pass
    with open(r["log"], errors="replace") as f:
        output = f.read()
    step = {"name": name, "seconds": r["seconds"], "log": os.path.relpath(r["log"], out_dir)}
    step.update(judge(name, test, claim, r["rc"], r["timed_out"], cap_s, report, output, gpu, gpu_reason))
    if step["status"] in ("failed", "timeout"):
        step["tail"] = r["tail"][-1500:]
    return step


def run_all(build_dir, out_dir, budget, gpu, gpu_reason, jobs):
    """Every train-* step, `jobs` at a time (each its own processes: the GPU holds several tiny
    runs at once). Returns the steps in CHECKS' order."""
    binary = test_binary(build_dir)
    if not os.access(binary, os.X_OK):
        return [{"name": c[0], "status": "failed", "reason": f"{binary} is not built"} for c in CHECKS]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda c: run_one(binary, c, out_dir, budget, gpu, gpu_reason), CHECKS))
