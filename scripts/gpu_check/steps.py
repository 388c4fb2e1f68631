"""One step of scripts/gpu-check: a command with a time cap, its log in OUT/logs, and the figures
the command wrote (FABKIT_BENCH_JSON) or the reason it could not run."""
import json
import os
import signal
import subprocess
import time


class Budget:
    """The whole check's wall-clock budget; each step gets min(its cap, what is left)."""

    def __init__(self, total_s):
        self.total_s = total_s
        self.start = time.monotonic()

    def left_s(self):
        return self.total_s - (time.monotonic() - self.start)

    def cap(self, want_s):
        return max(0.0, min(want_s, self.left_s()))


def run_command(name, argv, out_dir, cap_s, env=None, cwd=None):
    """Runs argv in its own session (so a cap kills its children too), output to
    OUT/logs/NAME.log. Returns {"rc", "seconds", "timed_out", "log", "tail"}."""
    os.makedirs(os.path.join(out_dir, "logs"), exist_ok=True)
    log = os.path.join(out_dir, "logs", name + ".log")
    start = time.monotonic()
    with open(log, "w") as f:
        f.write("$ " + " ".join(argv) + "\n")
        f.flush()
        try:
            p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)
        except OSError as e:
            f.write(f"cannot start: {e}\n")
            return {"rc": 127, "seconds": 0.0, "timed_out": False, "log": log, "tail": f"cannot start {argv[0]}: {e}"}
        timed_out = False
        try:
            rc = p.wait(timeout=max(1.0, cap_s))
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(p.pid, signal.SIGTERM)
            try:
                rc = p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                rc = p.wait()
    with open(log, errors="replace") as f:
        tail = f.read()[-2500:]
    return {"rc": rc, "seconds": round(time.monotonic() - start, 1), "timed_out": timed_out, "log": log,
            "tail": tail}


def configured(build_dir):
    """A build that stopped part-way (one target failed to compile or link, the build kept going)
    still has its generator's file: the steps after it run what did build, each failing on its
    own where its binary is missing, instead of the whole scarce GPU run being lost."""
    return any(os.path.exists(os.path.join(build_dir, f)) for f in ("build.ninja", "Makefile"))


def bench_step(name, argv, out_dir, cap_s, cannot_run_rc=2, env=None):
    """A bench script that writes its figures to $FABKIT_BENCH_JSON and exits cannot_run_rc with
    a 'cannot run on this machine: WHY' line when the hardware is absent."""
    figures_path = os.path.join(out_dir, name + ".json")
    if os.path.exists(figures_path):
        os.remove(figures_path)
    env = dict(env or os.environ, FABKIT_BENCH_JSON=figures_path)
    r = run_command(name, argv, out_dir, cap_s, env=env)
    step = {"name": name, "seconds": r["seconds"], "log": os.path.relpath(r["log"], out_dir)}
    figures = None
    if os.path.exists(figures_path):
        with open(figures_path) as f:
            figures = json.load(f)
    if r["timed_out"]:
        step.update(status="timeout", reason=f"killed after {cap_s:.0f} s (its share of the budget)")
    elif r["rc"] == cannot_run_rc and "cannot run on this machine" in r["tail"]:
        why = [l for l in r["tail"].splitlines() if "cannot run on this machine" in l][-1]
        step.update(status="skipped", reason=why.split("cannot run on this machine:", 1)[1].strip())
    elif r["rc"] == 0:
        step.update(status="passed")
    else:
        step.update(status="failed", reason=f"exit {r['rc']}", tail=r["tail"][-1500:])
    if figures is not None:
        step["figures"] = figures
    return step
