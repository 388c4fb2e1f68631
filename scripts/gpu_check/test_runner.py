"""Runs a build's tests selected by name, in parallel, each with its own timeout, and says why
each skipped test skipped.

The list and each test's command come from `ctest --show-only=json-v1` (so gtest_discover_tests'
cases, environments and working directories are exactly ctest's). They are run here rather than
by a nested `ctest` because this also runs inside the project's own test suite (the rehearsal),
where a second ctest on the same build directory would overwrite the outer run's
Testing/Temporary logs, and because the skip reason (the text after gtest's "Skipped") is wanted
in the summary, which ctest does not report.
"""
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

# The tests with a GPU, NVML, CUDA or NCCL path: on a machine without one they skip (saying why);
# on a GPU machine they must pass. Pure NCCL-env/topology tests match too; they take milliseconds.
GPU_TESTS = (r"Gpu|GPU|Nvml|NvidiaSmi|Nccl|Cuda|CUDA|HwlocLive|LocalityProbe\.Live|integration_nccl|"
             r"node_cli_json|node_active|"
             # The toolchain there is not this one: every binary's std::filesystem bindings.
             r"^link_")
# Never run from here: the rehearsal of scripts/gpu-check itself (it would run itself again).
NEVER = ("integration_gpu_check",)

# A skip whose reason says the hardware is absent, seen on a machine that has a GPU, is a failure:
# the test did not see the GPU it was written for.
ABSENT_GPU = re.compile(r"needs an NVIDIA GPU|no NVIDIA driver|NVML lists no GPU|no CUDA device|"
                        r"CUDA is not available|no GPU (here|visible|on this machine)", re.I)


def _show_only(build_dir):
    """`ctest --show-only=json-v1` over a copy of the build's CTestTestfile.cmake tree: even
    --show-only rewrites BUILD/Testing/Temporary/LastTest.log, which would wipe the log of a ctest
    run in progress on that build (the rehearsal runs inside one). The copied files include the
    build's gtest lists by absolute path, so the listing is the build's own."""
    with tempfile.TemporaryDirectory(prefix="fabkit-gpu-check-ctest-") as copy:
        for dirpath, dirnames, filenames in os.walk(build_dir):
            dirnames[:] = [d for d in dirnames if d not in ("Testing", "CMakeFiles")]
            if "CTestTestfile.cmake" in filenames:
                out = os.path.join(copy, os.path.relpath(dirpath, build_dir))
                os.makedirs(out, exist_ok=True)
                shutil.copy(os.path.join(dirpath, "CTestTestfile.cmake"), out)
        r = subprocess.run(["ctest", "--test-dir", copy, "--show-only=json-v1"], capture_output=True,
                           text=True, timeout=120)
        # A test without its own WORKING_DIRECTORY runs in its CTestTestfile's folder: the build's.
        r.stdout = r.stdout.replace(json.dumps(copy)[1:-1], json.dumps(os.path.abspath(build_dir))[1:-1])
        return r


def list_tests(build_dir, regex):
    r = _show_only(build_dir)
    if r.returncode != 0:
        raise RuntimeError(f"ctest --show-only failed in {build_dir}: {r.stderr.strip()[-500:]}")
    doc = json.loads(r.stdout)
    pattern = re.compile(regex)
    tests = []
    for t in doc.get("tests", []):
        if not pattern.search(t["name"]) or "command" not in t or t["name"] in NEVER:
            continue
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        if props.get("DISABLED"):
            continue
        tests.append({"name": t["name"], "command": t["command"], "props": props})
    return tests


def built_outside(tests, build_dir, built):
    """The (test, file) pairs where a selected test runs, or is handed, an executable of this build
    that is not among `built` (BUILD/gpu-check-targets.txt: what gpu-check's partial build makes).
    On the GPU machine such a binary would not exist and its tests would not even be listed."""
    root = os.path.realpath(build_dir) + os.sep
    built = {os.path.realpath(f) for f in built}
    missing = []
    for t in tests:
        for arg in t["command"]:
            path = os.path.realpath(arg)
            if (path.startswith(root) and os.path.isfile(path) and os.access(path, os.X_OK)
                    and path not in built):
                missing.append((t["name"], path))
    return missing


def skip_reason(output):
    """gtest prints 'file:line: Skipped' then the message; other tests print their reason last."""
    lines = output.splitlines()
    for i, l in enumerate(lines):
        if l.endswith(": Skipped") or l.strip() == "Skipped":
            msg = []
            for m in lines[i + 1:]:
                if m.startswith("[  SKIPPED ]") or m.startswith("[       OK ]"):
                    break
                if m.strip():
                    msg.append(m.strip())
            if msg:
                return " ".join(msg)[:500]
    tail = [l.strip() for l in lines if l.strip()]
    return tail[-1][:500] if tail else "no reason printed"


def _env(props):
    env = dict(os.environ)
    for item in props.get("ENVIRONMENT", []) or []:
        k, _, v = item.partition("=")
        env[k] = v
    return env


def _run_one(t, deadline, default_timeout_s):
    props = t["props"]
    timeout = float(props.get("TIMEOUT", default_timeout_s) or default_timeout_s)
    timeout = min(timeout, max(0.0, deadline - time.monotonic()))
    if timeout <= 1:
        return {"name": t["name"], "status": "not_run", "seconds": 0.0, "reason": "the step's time budget ran out"}
    start = time.monotonic()
    try:
        p = subprocess.Popen(t["command"], cwd=props.get("WORKING_DIRECTORY") or None, env=_env(props),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                             start_new_session=True)
    except OSError as e:
        return {"name": t["name"], "status": "failed", "seconds": 0.0, "reason": f"cannot start: {e}"}
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return {"name": t["name"], "status": "timeout", "seconds": round(time.monotonic() - start, 2),
                "reason": f"killed after {timeout:.0f} s", "tail": out[-2000:]}
    res = {"name": t["name"], "seconds": round(time.monotonic() - start, 2)}
    skip_rc = props.get("SKIP_RETURN_CODE")
    skip_re = props.get("SKIP_REGULAR_EXPRESSION") or []
    if isinstance(skip_re, str):
        skip_re = [skip_re]
    if (skip_rc is not None and p.returncode == int(skip_rc)) or any(re.search(x, out) for x in skip_re):
        res.update(status="skipped", reason=skip_reason(out))
    elif (p.returncode == 0) != bool(props.get("WILL_FAIL")):
        res.update(status="passed")
    else:
        res.update(status="failed", reason=f"exit {p.returncode}", tail=out[-3000:])
    return res


def run_tests(tests, jobs, budget_s, default_timeout_s=120, machine_has_gpu=False):
    """Runs tests (from list_tests); RESOURCE_LOCK and RUN_SERIAL respected. Returns the per-test
    results, in the list's order."""
    deadline = time.monotonic() + budget_s
    locks = {}
    guard = threading.Lock()

    def locked(t):
        names = t["props"].get("RESOURCE_LOCK") or []
        with guard:
            held = [locks.setdefault(n, threading.Lock()) for n in sorted(names)]
        for l in held:
            l.acquire()
        try:
            return _run_one(t, deadline, default_timeout_s)
        finally:
            for l in reversed(held):
                l.release()

    parallel = [t for t in tests if not t["props"].get("RUN_SERIAL")]
    serial = [t for t in tests if t["props"].get("RUN_SERIAL")]
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for t, r in zip(parallel, pool.map(locked, parallel)):
            results[t["name"]] = r
    for t in serial:
        results[t["name"]] = locked(t)
    out = [results[t["name"]] for t in tests]
    if machine_has_gpu:
        for r in out:
            if r["status"] == "skipped" and ABSENT_GPU.search(r.get("reason", "")):
                r["status"] = "failed"
                r["reason"] = "skipped on a machine that has a GPU: " + r["reason"]
    return out
