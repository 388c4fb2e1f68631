#!/usr/bin/python3
"""scripts/gpu-check rehearsed on this machine: everything it does that needs no GPU.

- the whole command with --quick over the existing build: every step reports, the GPU tests run
  (pass, or skip naming the absent hardware), the fabtrain bench runs both contenders, the netns
  pair measures, the node timing and the active check report; summary.json/.txt are complete;
- the carried packages: fetched with apt (skipped, 77, when the mirror cannot be reached), then
  unpacked into a merged-/usr root that must keep its /lib symlink and its own files;
- the parts with rules of their own: a step over its cap is killed, a skip for want of a GPU on
  a machine with one is a failure, resource locks serialise, bad options exit 2.
On a GPU machine the same test runs the GPU parts for real (at the --quick sizes).

usage: test_gpu_check.py --build BUILD --python PYTHON"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from gpu_check import carry, node_active, steps, summary, test_runner, train_checks  # noqa: E402

ARGS = None
GPU_CHECK = os.path.join(ROOT, "scripts", "gpu-check")


def have_gpu():
    smi = shutil.which("nvidia-smi")
    return bool(smi) and "GPU " in subprocess.run([smi, "-L"], capture_output=True, text=True).stdout


class WholeCommand(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = tempfile.mkdtemp(prefix="fabkit-gpu-check-")
        # Its own TMPDIR: what the steps leave behind there is seen (the GPU machine's disk is small).
        cls.tmp = tempfile.mkdtemp(prefix="fabkit-gpu-check-tmp-")
        start = time.monotonic()
        cls.proc = subprocess.run([GPU_CHECK, "--quick", "--no-build", "--build-dir", ARGS.build, "--python",
                                   ARGS.python, "--out", cls.out, "--jobs", "2", "--budget-s", "420"],
                                  capture_output=True, text=True, timeout=600, env=dict(os.environ, TMPDIR=cls.tmp))
        cls.left_in_tmp = sorted(os.listdir(cls.tmp))
        cls.wall_s = time.monotonic() - start
        with open(os.path.join(cls.out, "summary.json")) as f:
            cls.doc = json.load(f)
        cls.steps = {s["name"]: s for s in cls.doc["steps"]}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_exits_zero_with_nothing_failed_within_the_budget(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout[-4000:] + self.proc.stderr[-2000:])
        self.assertTrue(self.doc["ok"])
        self.assertEqual(self.doc["failed"], [])
        self.assertTrue(self.doc["within_budget"])
        self.assertLess(self.wall_s, 420 + 30)

    def test_every_step_reports_and_each_skip_says_why(self):
        names = set(self.steps)
        bench = [n for n in names if n.startswith("fabtrain-bench")]
        self.assertTrue(bench, names)
        for n in ("deps", "build", "gpu-tests", "nccl-pair", "node-timing", "node-active"):
            self.assertIn(n, names)
        for s in self.doc["steps"]:
            self.assertIn(s["status"], ("passed", "skipped"), s)
            if s["status"] == "skipped":
                self.assertTrue(s.get("reason"), s)
        # OK, but the headline names what did not run (here at least deps: no --debs given).
        skipped = [s["name"] for s in self.doc["steps"] if s["status"] == "skipped"]
        self.assertIn("deps", skipped)
        self.assertEqual(self.doc["skipped"], skipped)
        with open(os.path.join(self.out, "summary.txt")) as fh:
            first = fh.readline()
        self.assertIn(f": OK, {len(skipped)} step(s) skipped (reasons below): {', '.join(skipped)}", first)

    def test_the_gpu_tests_ran_and_absent_hardware_is_named(self):
        t = self.steps["gpu-tests"]
        self.assertGreaterEqual(len(t["tests"]), 100)
        self.assertEqual(t["figures"]["failed"], 0)
        self.assertGreater(t["figures"]["passed"], 50)
        names = {x["name"] for x in t["tests"]}
        for must in ("NcclChild.OneRankAllReduceOnTheGpu", "NvmlAgainstNvidiaSmi.LiveFactsMatchNvidiaSmiQ",
                     "GpuBenchLive.MeasuresEveryGpu"):
            self.assertIn(must, names)
        for x in t["tests"]:
            if x["status"] == "skipped":
                self.assertTrue(x["reason"] and x["reason"] != "no reason printed", x)
                if not have_gpu():
                    continue
                self.assertIsNone(test_runner.ABSENT_GPU.search(x["reason"]), x)

    def test_the_fabtrain_bench_ran_both_contenders(self):
        b = [s for n, s in self.steps.items() if n.startswith("fabtrain-bench")][0]
        self.assertEqual(b["status"], "passed", b)
        f = b["figures"]
        self.assertGreater(f["median_ratio"], 0)
        r = f["rounds"][0]
        self.assertGreater(r["fabtrain"]["tokens_per_s"], 0)
        self.assertGreater(r["eager"]["tokens_per_s"], 0)
        self.assertIn("sdpa" if f["reference"].startswith("hf") else "plain", f["reference"])
        # Both trained the same model on the same batches: every step's loss agreed.
        self.assertTrue(f["loss_guard"]["passed"], f["loss_guard"])
        self.assertEqual(len(r["fabtrain"]["losses"]), f["steps"])
        self.assertTrue(f["versions"]["torch"])
        self.assertTrue(f["sdpa_ops"]["eager"])
        if have_gpu():
            self.assertEqual(f["device"], "cuda")
        # One traced step, summarised: kernels on a GPU, host ops on the CPU.
        t = f["trace"]
        self.assertEqual(t["mode"], "gpu" if have_gpu() else "cpu")
        self.assertEqual(t["steps"], 1)
        self.assertGreater(t["step_ms"], 0)
        self.assertGreater(t["busy_ms"], 0)
        self.assertTrue(t["top"])
        if have_gpu():
            self.assertIn("matmul", {k["kind"] for k in t["kinds"]})
        with open(os.path.join(self.out, "summary.txt")) as fh:
            self.assertIn("trace: 1 step(s)", fh.read())
        # Its model, data and fabtrain's outputs (no checkpoint is written) are removed.
        self.assertEqual([f for f in self.left_in_tmp if f.startswith("fabtrain-gpu-bench-")], [])

    def test_the_train_checks_ran_on_the_gpu_or_were_rehearsed_on_the_cpu(self):
        with open(os.path.join(self.out, "summary.txt")) as fh:
            text = fh.read()
        for name, test, _, claim in train_checks.CHECKS:
            s = self.steps[name]
            if have_gpu() and s["status"] == "skipped":
                # The one skip allowed there: NCCL refused two ranks on one GPU, in its own words.
                self.assertIn("NCCL would not make two ranks on one GPU", s["reason"], s)
                continue
            self.assertEqual(s["status"], "passed" if have_gpu() else "skipped", s)
            f = s["figures"]
            self.assertEqual(f["device"], "cuda" if have_gpu() else "cpu", s)
            if have_gpu():
                self.assertEqual(s["note"], claim)
                line = f"  passed   {name} {s['seconds']} s\n    note: {claim}\n"
            else:
                self.assertTrue(s["reason"].startswith("not run on a GPU ("), s)
                self.assertTrue(s["reason"].endswith("; its CPU rehearsal (Gloo) passed"), s)
                line = f"  skipped  {name} {s['seconds']} s: {s['reason']}\n"
            self.assertIn(line, text)
            # The figures the test recorded, on the line after: the differences it held in bounds.
            self.assertIn("    " + ", ".join(f"{k} {v}" for k, v in sorted(f.items())) + "\n", text)
            for k in ("worst_loss_rel_diff", "max_weight_diff"):
                if k in f:
                    self.assertLess(float(f[k]), 1e-4, (name, f))
            self.assertTrue(os.path.exists(os.path.join(self.out, "logs", name + ".log")))
        self.assertGreater(int(self.steps["train-fp16"]["figures"]["overflow_steps_skipped"]), 0)

    def test_the_pair_and_the_node_figures(self):
        p = self.steps["nccl-pair"]
        runner = os.path.join(ARGS.build, "cli", "fabcheck-nccl-runner")
        if os.geteuid() != 0 or not os.access(runner, os.X_OK):
            # netns needs root; the runner is built only where CUDA and NCCL were found.
            self.assertEqual(p["status"], "skipped", p)
        else:
            self.assertEqual(p["status"], "passed", p)
            by = {x["transport"]: x for x in p["figures"]["pair"]}
            self.assertEqual(by["fabkit-socket"]["status"], "ok")
            self.assertGreater(by["fabkit-socket"]["max_busbw_gbps"], 0)
            self.assertEqual(by["nccl-socket"]["status"], "ok" if have_gpu() else "unavailable")
        n = self.steps["node-timing"]["figures"]
        self.assertGreater(n["median_ms"]["fabcheck node --json"], 0)
        a = self.steps["node-active"]
        self.assertEqual(a["status"], "passed" if have_gpu() else "skipped", a)

    def test_the_text_summary_names_every_step(self):
        with open(os.path.join(self.out, "summary.txt")) as f:
            text = f.read()
        self.assertIn("fabkit gpu-check", text)
        for n in self.steps:
            self.assertIn(n, text)
        self.assertTrue(os.path.exists(os.path.join(self.out, "logs", "node-timing.log")))


def make_deb(dirpath, name, files):
    """A real .deb (dpkg-deb --build) holding files {relative path: content or ('link', target)}."""
    pkg = os.path.join(dirpath, "src-" + name)
    os.makedirs(os.path.join(pkg, "DEBIAN"))
    with open(os.path.join(pkg, "DEBIAN", "control"), "w") as f:
        f.write(f"Package: {name}\nVersion: 1.0\nArchitecture: amd64\nMaintainer: t <t@t>\nDescription: t\n")
    for rel, body in files.items():
        p = os.path.join(pkg, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if isinstance(body, tuple):
            os.symlink(body[1], p)
        else:
            with open(p, "w") as f:
                f.write(body)
    out = os.path.join(dirpath, "debs")
    os.makedirs(out, exist_ok=True)
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", pkg, os.path.join(out, name + ".deb")],
                   check=True, capture_output=True)
    return out


def merged_usr_root(d):
    root = os.path.join(d, "root")
    os.makedirs(os.path.join(root, "usr", "lib", "x86_64-linux-gnu"))
    os.makedirs(os.path.join(root, "usr", "include"))
    # Like Ubuntu 24.04: /lib, /bin and /sbin are links into /usr.
    for top in ("lib", "bin", "sbin"):
        os.makedirs(os.path.join(root, "usr", top), exist_ok=True)
        os.symlink("usr/" + top, os.path.join(root, top))
    with open(os.path.join(root, "usr", "include", "kept.h"), "w") as f:
        f.write("the target's own\n")
    return root


class Carry(unittest.TestCase):
    def test_unpacks_into_a_merged_usr_root_without_replacing_anything(self):
        with tempfile.TemporaryDirectory() as d:
            debs = make_deb(d, "libfake-dev", {
                "lib/x86_64-linux-gnu/libfake.so.1": "elf",
                "usr/lib/x86_64-linux-gnu/libfake.so": ("link", "/lib/x86_64-linux-gnu/libfake.so.1"),
                "usr/include/fake.h": "int fake;\n",
                "usr/include/kept.h": "the package's\n"})
            root = merged_usr_root(d)
            r = carry.install(debs, root=root)
            self.assertEqual(r["packages"], ["libfake-dev.deb"])
            self.assertTrue(os.path.islink(os.path.join(root, "lib")), "the /lib symlink was replaced")
            self.assertTrue(os.path.isfile(os.path.join(root, "usr/lib/x86_64-linux-gnu/libfake.so.1")))
            self.assertEqual(os.readlink(os.path.join(root, "usr/lib/x86_64-linux-gnu/libfake.so")),
                             "/lib/x86_64-linux-gnu/libfake.so.1")
            with open(os.path.join(root, "usr/include/kept.h")) as f:
                self.assertEqual(f.read(), "the target's own\n")
            self.assertEqual(r["kept"], 1)

    def test_an_empty_folder_names_the_command_that_fills_it(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(RuntimeError) as e:
                carry.install(d, root=d)
            self.assertIn("--download-debs", str(e.exception))

    def test_the_listed_packages_give_every_header_the_build_needs(self):
        with tempfile.TemporaryDirectory() as d:
            try:
                debs = carry.download(os.path.join(d, "debs"))
            except RuntimeError as e:
                if "Failed to fetch" in str(e) or "Temporary failure" in str(e) or "Could not resolve" in str(e):
                    raise unittest.SkipTest(f"the Debian mirror cannot be reached: {e}")
                raise
            size = sum(os.path.getsize(x) for x in debs)
            self.assertLess(size, 64 * 2**20, "the carry must fit the device tool's 64 MiB")
            root = merged_usr_root(d)
            carry.install(os.path.join(d, "debs"), root=root)
            for h in ("infiniband/verbs.h", "hwloc.h", "CLI/CLI.hpp", "nlohmann/json.hpp", "gtest/gtest.h",
                      "gmock/gmock.h", "pugixml.hpp", "gloo/allreduce.h", "sentencepiece_processor.h",
                      "openssl/sha.h"):
                self.assertTrue(os.path.exists(os.path.join(root, "usr/include", h)), h)
            lib = os.path.join(root, "usr/lib/x86_64-linux-gnu")
            # The link-time names (links: libcrypto.so's target is the machine's own libssl3 runtime).
            for so in ("libibverbs.so", "libhwloc.so", "libpugixml.so", "libsentencepiece.so", "libcrypto.so"):
                self.assertTrue(os.path.lexists(os.path.join(lib, so)), so)
            self.assertTrue(os.path.exists(os.path.join(root, "usr/lib/libgloo.so")))  # Debian puts it there
            self.assertTrue(os.path.islink(os.path.join(root, "lib")))
            self.assertTrue(os.path.exists(os.path.join(root, "usr/bin/ninja")))
            self.assertTrue(os.path.exists(os.path.join(root, "usr/sbin/ip")))  # the netns pair
            self.assertTrue(os.path.islink(os.path.join(root, "sbin")))
            self.assertEqual(runtime_deps_missing(debs), [])


# What the GPU machine's image (Ubuntu 24.04 with CUDA, python3, g++) has of its own; every other
# Depends of a carried runtime package must be carried too. libgloo0's libhiredis0.14 was missed
# once: every binary that links Gloo failed to link there.
IMAGE_HAS = {"libc6", "libgcc-s1", "libstdc++6", "libssl3", "zlib1g", "libudev1", "libpcre2-8-0",
             "libgssapi-krb5-2", "libtirpc-common", "libcap2-bin", "debconf", "debconf-2.0", "adduser",
             # libibverbs1's device drivers: there is no HCA there to drive.
             "ibverbs-providers"}


def runtime_deps_missing(debs):
    """Depends of the carried non -dev packages that are neither carried nor in IMAGE_HAS."""
    def field(deb, name):
        return subprocess.run(["dpkg-deb", "-f", deb, name], capture_output=True, text=True, check=True).stdout
    carried = {field(d, "Package").strip() for d in debs}
    missing = []
    for deb in debs:
        pkg = field(deb, "Package").strip()
        if pkg.endswith("-dev"):
            continue  # headers: their -dev Depends matter only to code fabkit does not build
        for dep in filter(None, (x.strip() for x in field(deb, "Depends").split(","))):
            choices = [re.sub(r"\(.*?\)|:any", "", c).strip() for c in dep.split("|")]
            if not any(c in carried or c in IMAGE_HAS for c in choices):
                missing.append(f"{pkg}: {dep}")
    return missing


def fake_test(name, script, **props):
    p = {"SKIP_REGULAR_EXPRESSION": [r"\[  SKIPPED \]"], "WORKING_DIRECTORY": "/"}
    p.update(props)
    return {"name": name, "command": ["/bin/sh", "-c", script], "props": p}


SKIP_NO_GPU = "echo 'x.cc:9: Skipped'; echo 'needs an NVIDIA GPU: none here'; echo '[  SKIPPED ] A.b'"
SKIP_TWO_GPUS = "echo 'x.cc:9: Skipped'; echo 'needs 2 GPUs for a 2-rank all-reduce'; echo '[  SKIPPED ] A.c'"


class Rules(unittest.TestCase):
    def test_the_steps_run_after_a_build_that_stopped_part_way(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertFalse(steps.configured(d))  # configure failed: nothing to run
            with open(os.path.join(d, "CMakeCache.txt"), "w"):
                pass
            self.assertFalse(steps.configured(d))  # a cache alone is a configure that stopped
            with open(os.path.join(d, "build.ninja"), "w"):
                pass
            self.assertTrue(steps.configured(d))

    def test_a_gpu_absent_skip_fails_only_on_a_machine_with_a_gpu(self):
        tests = [fake_test("A.b", SKIP_NO_GPU), fake_test("A.c", SKIP_TWO_GPUS), fake_test("A.d", "exit 3")]
        off = {r["name"]: r for r in test_runner.run_tests(tests, 2, 60, machine_has_gpu=False)}
        self.assertEqual(off["A.b"]["status"], "skipped")
        self.assertEqual(off["A.b"]["reason"], "needs an NVIDIA GPU: none here")
        self.assertEqual(off["A.d"]["status"], "failed")
        on = {r["name"]: r for r in test_runner.run_tests(tests, 2, 60, machine_has_gpu=True)}
        self.assertEqual(on["A.b"]["status"], "failed")
        self.assertIn("skipped on a machine that has a GPU", on["A.b"]["reason"])
        self.assertEqual(on["A.c"]["status"], "skipped")

    def test_a_test_past_its_timeout_is_killed_and_the_rest_wait_on_their_lock(self):
        tests = [fake_test("L.one", "sleep 1; echo a >> \"$F\"", RESOURCE_LOCK=["x"]),
                 fake_test("L.two", "sleep 1; echo b >> \"$F\"", RESOURCE_LOCK=["x"]),
                 fake_test("T.slow", "sleep 30", TIMEOUT=2)]
        with tempfile.TemporaryDirectory() as d:
            os.environ["F"] = os.path.join(d, "f")
            start = time.monotonic()
            res = {r["name"]: r for r in test_runner.run_tests(tests, 3, 60)}
            took = time.monotonic() - start
        self.assertEqual(res["T.slow"]["status"], "timeout")
        self.assertLess(took, 10)
        # Serialised by the lock: the two 1 s tests cannot overlap.
        self.assertGreaterEqual(res["L.one"]["seconds"] + res["L.two"]["seconds"], 2.0)
        self.assertGreaterEqual(took, 2.0)

    def test_a_step_over_its_cap_is_killed_with_its_children(self):
        with tempfile.TemporaryDirectory() as d:
            start = time.monotonic()
            r = steps.run_command("sleepy", ["sh", "-c", "sleep 60 & sleep 60"], d, 1)
            self.assertTrue(r["timed_out"])
            self.assertLess(time.monotonic() - start, 15)

    def test_listing_the_tests_leaves_the_builds_ctest_log_alone(self):
        # This test itself runs inside a ctest on the same build: its log must survive.
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "CMakeLists.txt"), "w") as f:
                f.write("cmake_minimum_required(VERSION 3.22)\nproject(x NONE)\nenable_testing()\n"
                        "add_test(NAME GpuX COMMAND true)\n")
            b = os.path.join(d, "b")
            subprocess.run(["cmake", "-S", d, "-B", b], check=True, capture_output=True)
            subprocess.run(["ctest", "--test-dir", b], check=True, capture_output=True)
            log = os.path.join(b, "Testing", "Temporary", "LastTest.log")
            with open(log) as f:
                before = f.read()
            listed = test_runner.list_tests(b, "Gpu")
            self.assertEqual([t["name"] for t in listed], ["GpuX"])
            # Without a WORKING_DIRECTORY of its own a test runs in the build's folder, not the copy's.
            self.assertEqual(listed[0]["props"]["WORKING_DIRECTORY"], os.path.abspath(b))
            with open(log) as f:
                self.assertEqual(f.read(), before)

    def pair_under_fake_ip(self, ip_script, tools=None):
        """gpu-check's nccl-pair step with `ip` replaced by a sh script (what a container refuses),
        and each of `tools` (name: file text) put first on PATH too."""
        if os.geteuid() != 0:
            self.skipTest("needs root: the check asks for root before it tries ip")
        runner = os.path.join(ARGS.build, "cli", "fabcheck-nccl-runner")
        if not os.access(runner, os.X_OK):
            self.skipTest(f"{runner} is not built (no NCCL in this build): the pair says so before trying ip")
        with tempfile.TemporaryDirectory() as d:
            for name, text in dict(tools or {}, ip="#!/bin/sh\n" + ip_script).items():
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
                os.chmod(os.path.join(d, name), 0o755)
            env = dict(os.environ, PATH=d + os.pathsep + os.environ["PATH"])
            return steps.bench_step("nccl-pair", [sys.executable, os.path.join(ROOT, "bench", "nccl", "netns_pair.py"),
                                                  ARGS.build, "1048576"], d, 60, env=env)

    def test_a_container_that_makes_namespaces_but_cannot_enter_them_skips_the_pair_naming_why(self):
        # What a container without CAP_SYS_ADMIN over its mounts does: `ip netns add` works,
        # `ip netns exec` cannot remount /sys. The pair is then skipped with ip's words, not failed
        # half-way through building its hosts.
        step = self.pair_under_fake_ip("[ \"$1 $2\" = 'netns exec' ] && "
                                       "{ echo 'mount --make-rslave /: Permission denied' >&2; exit 1; }\nexit 0\n")
        self.assertEqual(step["status"], "skipped", step)
        self.assertEqual(step["reason"], "ip netns exec failed: mount --make-rslave /: Permission denied")

    def test_a_container_without_bridges_skips_the_pair_naming_why(self):
        # Namespaces and veth work, a bridge does not (a kernel without the bridge module): the
        # probe names it, instead of the hosts' set-up failing with a traceback.
        step = self.pair_under_fake_ip("case \"$*\" in *'type bridge'*) "
                                       "echo 'Error: Unknown device type.' >&2; exit 2;; esac\nexit 0\n")
        self.assertEqual(step["status"], "skipped", step)
        self.assertEqual(step["reason"], "a bridge inside a namespace failed: Error: Unknown device type.")

    def test_an_nvidia_smi_that_cannot_answer_skips_the_pair_instead_of_guessing_no_gpu(self):
        # An nvidia-smi that is there but cannot run (here: not a program the kernel can start;
        # on a machine, a hung driver) says nothing about the GPU: the pair names it rather than
        # running as if the machine had none.
        step = self.pair_under_fake_ip("exit 0\n", tools={"nvidia-smi": "\x7fELF not really\n"})
        self.assertEqual(step["status"], "skipped", step)
        self.assertRegex(step["reason"], r"^nvidia-smi -L failed: .*Exec format error")

    def test_pack_leaves_the_summary_and_one_archive_of_everything_else(self):
        # The device tool brings back 8 files: a full run writes more (logs, figure files).
        with tempfile.TemporaryDirectory() as out:
            p = subprocess.run([GPU_CHECK, "--no-build", "--build-dir", os.path.join(out, "nobuild"),
                                "--python", ARGS.python, "--out", out, "--pack", "--budget-s", "60",
                                "--skip", "deps,build,gpu-tests,train,fabtrain-bench,nccl-pair,node"],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(sorted(os.listdir(out)), ["gpu-check-files.tar.gz", "summary.json", "summary.txt"])
            with open(os.path.join(out, "summary.json")) as f:
                self.assertEqual(json.load(f)["packed"], "gpu-check-files.tar.gz")
            with open(os.path.join(out, "summary.txt")) as f:
                self.assertIn("logs and figure files: gpu-check-files.tar.gz", f.read())
            # What a real run leaves there, packed: folders, logs, figure files; the summary stays out.
            os.makedirs(os.path.join(out, "logs"))
            for name, body in (("logs/build.log", "built\n"), ("nccl-pair.json", "{}\n")):
                with open(os.path.join(out, name), "w") as f:
                    f.write(body)
            summary.pack(out)
            self.assertEqual(sorted(os.listdir(out)), ["gpu-check-files.tar.gz", "summary.json", "summary.txt"])
            with tarfile.open(os.path.join(out, "gpu-check-files.tar.gz")) as t:
                names = sorted(t.getnames())
                self.assertEqual(names, ["logs", "logs/build.log", "nccl-pair.json"])
                self.assertEqual(t.extractfile("logs/build.log").read(), b"built\n")

    def test_bad_options_exit_two_naming_them(self):
        for argv, words in ((["--skip", "bogus"], "bogus"), (["--budget-s", "5"], "--budget-s")):
            p = subprocess.run([GPU_CHECK, *argv], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(words, p.stderr)


class TrainChecks(unittest.TestCase):
    """The train-* steps' judgement (scripts/gpu_check/train_checks.py) and how a step runs its test:
    a fake test binary here, which writes gtest's JSON report as the real one does."""
    NAME, TEST, CLAIM = "train-x", "SomeCheck", "it matched"

    def report(self, result="COMPLETED", failures=(), **props):
        case = {"name": self.TEST, "status": "RUN", "result": result, "time": "1s", "classname": "OnDevice",
                **props}
        if failures:
            case["failures"] = [{"failure": f, "type": ""} for f in failures]
        return {"testsuites": [{"name": "OnDevice", "testsuite": [case]}]}

    def judge(self, rc=0, report=None, output="", gpu=False, timed_out=False):
        return train_checks.judge(self.NAME, self.TEST, self.CLAIM, rc, timed_out, 60, report, output, gpu,
                                  "nvidia-smi is not installed (no NVIDIA driver here)")

    def test_a_pass_on_the_gpu_passes_and_a_pass_on_the_cpu_is_only_a_rehearsal(self):
        r = self.report(device="cuda", worst_loss_rel_diff="3e-07")
        self.assertEqual(self.judge(report=r, gpu=True),
                         {"status": "passed", "note": "it matched",
                          "figures": {"device": "cuda", "worst_loss_rel_diff": "3e-07"}})
        j = self.judge(report=self.report(device="cpu"))
        self.assertEqual(j["status"], "skipped")
        self.assertEqual(j["reason"], "not run on a GPU (nvidia-smi is not installed (no NVIDIA driver here)); "
                                      "its CPU rehearsal (Gloo) passed")

    def test_a_failure_names_the_assertion_and_where_it_ran(self):
        r = self.report(failures=["x.cc:12\nExpected: (dw) < (kWeightTol), actual: 0.02 vs 0.0001\n"])
        j = self.judge(rc=1, report=r, gpu=True)
        self.assertEqual(j["status"], "failed")
        self.assertEqual(j["reason"], "on the GPU: x.cc:12 | Expected: (dw) < (kWeightTol), actual: 0.02 vs 0.0001")
        self.assertTrue(self.judge(rc=1, report=r)["reason"].startswith("its CPU rehearsal (Gloo): x.cc:12"))

    def test_a_test_that_did_not_run_fails(self):
        # gtest exits 0 when its filter matches nothing: the missing case is what says so.
        j = self.judge(rc=0, report={"testsuites": []})
        self.assertEqual(j, {"status": "failed", "reason": "OnDevice.SomeCheck is not in the test binary (exit 0): "
                                                           "nothing ran"})
        j = self.judge(rc=139, report=None)
        self.assertEqual(j["status"], "failed")
        self.assertIn("no gtest report (exit 139): it crashed", j["reason"])
        self.assertEqual(self.judge(timed_out=True, report=self.report())["status"], "timeout")

    def test_a_skip_for_want_of_a_gpu_fails_on_a_machine_that_has_one(self):
        absent = "x.cc:60: Skipped\nFABTRAIN_TEST_DEVICE=cuda but no NVIDIA device node (/dev/nvidia0): " \
                 "no GPU on this machine\n[  SKIPPED ] OnDevice.SomeCheck"
        self.assertEqual(self.judge(report=self.report("SKIPPED"), output=absent, gpu=True)["status"], "failed")
        refused = "x.cc:9: Skipped\nNCCL would not make two ranks on one GPU, each a host of its own: " \
                  "Duplicate GPU detected\n[  SKIPPED ] OnDevice.SomeCheck"
        j = self.judge(report=self.report("SKIPPED"), output=refused, gpu=True)
        self.assertEqual(j["status"], "skipped")
        self.assertIn("Duplicate GPU detected", j["reason"])

    def test_each_step_runs_its_test_on_the_device_the_machine_has(self):
        with tempfile.TemporaryDirectory() as d:
            binary = train_checks.test_binary(d)
            os.makedirs(os.path.dirname(binary))
            # The fake test: passes on cuda, fails on cpu, records the device it was given.
            with open(binary, "w") as f:
                f.write("#!/usr/bin/python3\nimport json, os, sys\n"
                        "name = [a for a in sys.argv if a.startswith('--gtest_filter=')][0].split('.', 1)[1]\n"
                        "path = [a for a in sys.argv if a.startswith('--gtest_output=json:')][0].split(':', 1)[1]\n"
                        "dev = os.environ['FABTRAIN_TEST_DEVICE']\n"
                        "case = {'name': name, 'result': 'COMPLETED', 'device': dev}\n"
                        "if dev != 'cuda': case['failures'] = [{'failure': 'ran on ' + dev}]\n"
                        "json.dump({'testsuites': [{'name': 'OnDevice', 'testsuite': [case]}]}, open(path, 'w'))\n"
                        "sys.exit(0 if dev == 'cuda' else 1)\n")
            os.chmod(binary, 0o755)
            out = os.path.join(d, "out")
            on_gpu = train_checks.run_all(d, out, steps.Budget(120), True, "", 2)
            self.assertEqual([s["name"] for s in on_gpu], [c[0] for c in train_checks.CHECKS])
            self.assertEqual({s["status"] for s in on_gpu}, {"passed"}, on_gpu)
            self.assertEqual({s["figures"]["device"] for s in on_gpu}, {"cuda"})
            off = train_checks.run_all(d, out, steps.Budget(120), False, "no GPU here", 1)
            self.assertEqual({s["status"] for s in off}, {"failed"}, off)
            self.assertEqual({s["reason"] for s in off}, {"its CPU rehearsal (Gloo): ran on cpu"})
            missing = train_checks.run_all(os.path.join(d, "nobuild"), out, steps.Budget(60), True, "", 1)
            self.assertEqual({s["status"] for s in missing}, {"failed"})
            self.assertIn("is not built", missing[0]["reason"])


def active_report(status="ran", figures=(("gemm_bf16", 700.0),), allreduce=(), skipped=(), **extra):
    """A `fabcheck node --active --json` report shaped as docs/json/gpu_active.md gives it."""
    ga = {"status": status, "elapsed_ms": 1234.0, "reason": None, "error": None, "stopped_at": None,
          "skipped": list(skipped), "allreduce": list(allreduce),
          "gpus": [{"index": 0, "name": "NVIDIA H200",
                    "figures": [{"name": n, "measured": v, "expected": 741.0, "fraction": None} for n, v in figures]}]}
    ga.update(extra)
    return {"gpu_active": ga, "findings": [{"severity": "warn", "code": "gpu_active.below_expected", "subject": "GPU 0"},
                                           {"severity": "info", "code": "rdma.no_devices", "subject": "node"}]}


class NodeActive(unittest.TestCase):
    """The node-active step's judgement (scripts/gpu_check/node_active.py): fabcheck exits 1 both
    for findings on a check that ran and for a check that stopped part-way; only the first passes."""

    def judge(self, rc=1, timed_out=False, report=None, error=None, gpu=True):
        return node_active.judge(rc, timed_out, report, error, gpu)

    def test_a_check_that_ran_passes_with_its_warn_findings_listed(self):
        status, reason, f = self.judge(report=active_report(skipped=["the NCCL all-reduce: it needs 2 or more GPUs"]))
        self.assertEqual((status, reason), ("passed", None))
        self.assertEqual(f["findings"], ["warn gpu_active.below_expected GPU 0"])
        self.assertEqual(f["skipped"], ["the NCCL all-reduce: it needs 2 or more GPUs"])

    def test_a_check_that_stopped_part_way_fails_naming_where(self):
        status, reason, _ = self.judge(report=active_report(status="incomplete", error="child_died",
                                                            stopped_at="GPU 0 h2d", reason="killed by signal 11"))
        self.assertEqual(status, "failed")
        self.assertEqual(reason, "gpu_active incomplete (child_died at GPU 0 h2d): killed by signal 11")

    def test_an_unmeasured_figure_or_a_failed_all_reduce_fails(self):
        status, reason, _ = self.judge(report=active_report(figures=(("gemm_bf16", 700.0), ("h2d", None))))
        self.assertEqual((status, reason), ("failed", "not measured: GPU 0 h2d"))
        ar = [{"algorithm": "default", "status": "ok"}, {"algorithm": "Ring", "status": "failed", "reason": "nccl_error"}]
        status, reason, _ = self.judge(rc=0, report=active_report(allreduce=ar))
        self.assertEqual((status, reason), ("failed", "all-reduce Ring failed: nccl_error"))

    def test_killed_is_a_timeout_even_without_a_report(self):
        status, reason, f = self.judge(rc=-15, timed_out=True, error="Expecting value: line 1 column 1")
        self.assertEqual(status, "timeout")
        self.assertIn("past its share", reason)
        self.assertIsNone(f)

    def test_unavailable_is_a_skip_only_without_a_gpu(self):
        r = active_report(status="unavailable", reason="NVML lists no GPU on this node")
        self.assertEqual(self.judge(rc=0, report=r, gpu=False)[:2],
                         ("skipped", "gpu_active unavailable: NVML lists no GPU on this node"))
        self.assertEqual(self.judge(rc=0, report=r, gpu=True)[0], "failed")
        self.assertEqual(self.judge(rc=2, report=r, gpu=False)[:2], ("failed", "exit 2"))
        self.assertEqual(self.judge(rc=1, report=None, error="no such file")[:2],
                         ("failed", "no JSON report (no such file); exit 1"))


class PartialBuild(unittest.TestCase):
    """gpu-check builds the target gpu-check-build, not everything (cmake/gpu_check_targets.cmake):
    every binary that a selected test runs must be in it, or on the GPU machine that test silently
    disappears from the run."""

    def test_every_selected_test_runs_a_binary_the_partial_build_makes(self):
        with open(os.path.join(ARGS.build, "gpu-check-targets.txt")) as f:
            built = [l.strip() for l in f if l.strip()]
        self.assertIn(os.path.realpath(os.path.join(ARGS.build, "cli", "fabcheck")),
                      {os.path.realpath(b) for b in built})
        tests = test_runner.list_tests(ARGS.build, test_runner.GPU_TESTS)
        self.assertGreaterEqual(len(tests), 100)
        missing = test_runner.built_outside(tests, ARGS.build, built)
        self.assertEqual(missing, [], "add these binaries' targets to FABKIT_GPU_CHECK_TARGETS in "
                                      "cmake/gpu_check_targets.cmake")

    def test_a_binary_left_out_of_the_list_is_named(self):
        tests = test_runner.list_tests(ARGS.build, test_runner.GPU_TESTS)
        gpu_test = os.path.realpath(os.path.join(ARGS.build, "tests", "unit", "gpu", "gpu_test"))
        with open(os.path.join(ARGS.build, "gpu-check-targets.txt")) as f:
            built = [l.strip() for l in f if os.path.realpath(l.strip()) != gpu_test]
        missing = test_runner.built_outside(tests, ARGS.build, built)
        self.assertTrue(missing)
        self.assertEqual({p for _, p in missing}, {gpu_test})

    def gpu_check_cmake_calls(self, *extra):
        """gpu-check's build step with a cmake on PATH that records how it is called (and
        "configures" a Ninja build): its configure and build command lines."""
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "bin")
            os.makedirs(fake)
            calls = os.path.join(d, "calls")
            with open(os.path.join(fake, "cmake"), "w") as f:
                f.write("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'cmake version 3.99'; exit 0; }\n"
                        f"printf '%s\\n' \"$*\" >> {calls}\n"
                        "[ \"$1\" = -S ] && touch \"$4/CMakeCache.txt\" \"$4/build.ninja\"\nexit 0\n")
            os.chmod(os.path.join(fake, "cmake"), 0o755)
            build = os.path.join(d, "b")
            os.makedirs(build)
            env = dict(os.environ, PATH=fake + os.pathsep + os.environ["PATH"])
            p = subprocess.run([GPU_CHECK, "--build-dir", build, "--out", os.path.join(d, "out"), "--python",
                                ARGS.python, "--skip", "gpu-tests,train,fabtrain-bench,nccl-pair,node", "--budget-s", "60",
                                *extra], capture_output=True, text=True, timeout=120, env=env)
            self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
            with open(calls) as f:
                return f.read().splitlines()

    def test_gpu_check_builds_the_partial_target_with_line_tables_and_the_torch_pch(self):
        configure, build_call = self.gpu_check_cmake_calls()
        self.assertIn("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG", configure)
        self.assertIn("-DFABKIT_TORCH_PCH=ON", configure)
        self.assertIn("--target gpu-check-build", build_call)
        configure, _ = self.gpu_check_cmake_calls("--no-torch-pch")
        self.assertIn("-DFABKIT_TORCH_PCH=OFF", configure)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True)
    p.add_argument("--python", required=True)
    ARGS, rest = p.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
