#!/usr/bin/env python3
"""trace_summary.py over a real fabtrain trace (CPU, made here by `fabtrain --trace-steps 2`) and
over a small GPU-format trace written in this test: no GPU trace from a real machine is in the
repository yet, so the GPU half checks the arithmetic (busy time as a union over streams, idle,
kinds by name) on events shaped as Kineto writes them (cat "kernel" / "gpu_memcpy", ts/dur in
microseconds). Bad input ends with exit 2 naming the file. gpu_bench.py, given a fabtrain that writes no trace,
keeps its figures and fails naming the trace.

usage: test_trace_summary.py --fabtrain FABTRAIN [--python PYTHON_WITH_TORCH]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import trace_summary  # noqa: E402
from bench_model import write_inputs  # noqa: E402

ARGS = None


def kernel(name, ts, dur, stream=7, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": f"stream {stream}", "ts": ts, "dur": dur}


def host(name, ts, dur, tid=1):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 100, "tid": tid, "ts": ts, "dur": dur}


class CpuTraceOfFabtrain(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = tempfile.TemporaryDirectory(prefix="fabkit-trace-")
        d = cls.d.name
        write_inputs(d, "tiny", records=32, length=32)
        r = subprocess.run([ARGS.fabtrain, "--model", os.path.join(d, "model"), "--data", os.path.join(d, "train.jsonl"),
                            "--format", "input_ids", "--output", os.path.join(d, "out"), "--max-length", "32",
                            "--micro-batch-size", "2", "--max-steps", "4", "--no-resume", "--device", "cpu",
                            "--trace-steps", "2"], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, OMP_NUM_THREADS="1"))
        assert r.returncode == 0, r.stderr[-3000:]
        cls.trace_dir = os.path.join(d, "out", "trace")

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def test_the_two_traced_steps_are_summarised_as_host_ops(self):
        s = trace_summary.summarize([self.trace_dir], top=10)
        self.assertEqual(s["mode"], "cpu")
        self.assertEqual(s["steps"], 2)
        self.assertEqual([os.path.basename(f) for f in s["files"]], ["rank-0-step-3.json", "rank-0-step-4.json"])
        self.assertGreater(s["step_ms"], 0)
        self.assertGreater(s["busy_ms"], 0)
        self.assertLessEqual(s["busy_ms"], s["step_ms"] + 1e-3)
        self.assertEqual(s["kinds"], [])
        # The model's matmuls are among the step's top-level ops, forward (aten::linear) and
        # backward (MmBackward0). Where they rank is the machine's speed, not the summary's
        # behaviour: on this tiny model under a loaded CI, RMSNorm's backward and allocations
        # outranked them in the top 3 once, so the check is that they are there, with time.
        every = trace_summary.summarize([self.trace_dir], top=100000)["top"]
        for op in ("aten::linear", "MmBackward"):
            timed = [t for t in every if op in t["name"]]
            self.assertTrue(timed and all(t["ms"] > 0 for t in timed), (op, [t["name"] for t in every]))
        # Top-level only: no op is counted inside its parent as well.
        self.assertLessEqual(sum(t["ms"] for t in s["top"]), s["busy_ms"] * 1.0001 + 1e-3)
        self.assertEqual([t["ms"] for t in s["top"]], sorted((t["ms"] for t in s["top"]), reverse=True))

    def test_the_command_line_prints_it_and_its_json(self):
        r = subprocess.run([sys.executable, os.path.join(HERE, "trace_summary.py"), self.trace_dir, "--top", "5"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("trace: 2 step(s), CPU run: step "), r.stdout)
        j = subprocess.run([sys.executable, os.path.join(HERE, "trace_summary.py"), self.trace_dir, "--json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(json.loads(j.stdout)["steps"], 2)


class GpuShapedTrace(unittest.TestCase):
    def write(self, d, name, events):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            json.dump({"schemaVersion": 1, "traceEvents": events}, f)
        return path

    def test_busy_is_the_union_over_streams_and_kernels_get_their_kind(self):
        events = [
            host("aten::linear", 0, 50),  # the step starts with the host
            kernel("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>", 100, 300),
            kernel("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4>, true>", 400, 200),
            # on another stream, overlapping the flash kernel by 50 us: counted once in busy
            kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 550, 100, stream=20),
            kernel("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>", 800, 100),
            kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", 900, 50),
            kernel("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, float>", 950, 25),
            kernel("Memcpy HtoD (Pageable -> Device)", 975, 25, cat="gpu_memcpy"),
            kernel("some_kernel_no_rule_knows", 1100, 100),
        ]
        with tempfile.TemporaryDirectory() as d:
            s = trace_summary.summarize([self.write(d, "rank-0-step-3.json", events)])
        self.assertEqual(s["mode"], "gpu")
        self.assertAlmostEqual(s["step_ms"], 1.2)  # 0 .. 1200 us
        # 100-650 (gemm, flash, nccl overlapping) + 800-1000 + 1100-1200
        self.assertAlmostEqual(s["busy_ms"], 0.85)
        self.assertAlmostEqual(s["idle_ms"], 0.35)
        kinds = {k["kind"]: k["ms"] for k in s["kinds"]}
        self.assertEqual(kinds, {"matmul": 0.3, "attention": 0.2, "nccl": 0.1, "optimizer": 0.1,
                                 "elementwise": 0.05, "loss": 0.025, "copy": 0.025, "other": 0.1})
        self.assertEqual(s["top"][0]["kind"], "matmul")
        self.assertAlmostEqual(s["top"][0]["share"], 0.25)
        text = trace_summary.render(s)
        self.assertIn("GPU busy 0.85 ms (70.8%), idle 0.35 ms", text)

    def test_means_over_steps(self):
        with tempfile.TemporaryDirectory() as d:
            a = self.write(d, "rank-0-step-3.json", [host("x", 0, 10), kernel("gemm", 0, 100)])
            b = self.write(d, "rank-0-step-4.json", [host("x", 0, 10), kernel("gemm", 0, 300)])
            s = trace_summary.summarize([a, b])
        self.assertEqual(s["steps"], 2)
        self.assertAlmostEqual(s["step_ms"], 0.2)
        self.assertAlmostEqual(s["top"][0]["ms"], 0.2)
        self.assertEqual(s["top"][0]["count"], 1)


class BadInput(unittest.TestCase):
    def run_cli(self, *paths):
        return subprocess.run([sys.executable, os.path.join(HERE, "trace_summary.py"), *paths],
                              capture_output=True, text=True, timeout=60)

    def test_each_names_the_file_and_exits_two(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "rank-0-step-3.json")
            with open(bad, "w") as f:
                f.write('{"traceEvents": [')  # cut short
            r = self.run_cli(bad)
            self.assertEqual(r.returncode, 2)
            self.assertIn(bad, r.stderr)
            with open(bad, "w") as f:
                json.dump({"traceEvents": {}}, f)
            self.assertIn("no traceEvents list", self.run_cli(bad).stderr)
            with open(bad, "w") as f:
                json.dump({"traceEvents": []}, f)
            self.assertIn("no host op and no device activity", self.run_cli(bad).stderr)
            empty = os.path.join(d, "empty")
            os.makedirs(empty)
            r = self.run_cli(empty)
            self.assertEqual(r.returncode, 2)
            self.assertIn("--trace-steps", r.stderr)
            r = self.run_cli(os.path.join(d, "absent"))
            self.assertEqual(r.returncode, 2)
            self.assertIn(os.path.join(d, "absent") + ": no such file or folder", r.stderr)

    def test_a_gpu_and_a_cpu_trace_are_not_averaged(self):
        with tempfile.TemporaryDirectory() as d:
            for name, evs in (("a.json", [kernel("gemm", 0, 10)]), ("b.json", [host("aten::mm", 0, 10)])):
                with open(os.path.join(d, name), "w") as f:
                    json.dump({"traceEvents": evs}, f)
            r = self.run_cli(d)
        self.assertEqual(r.returncode, 2)
        self.assertIn("mix GPU and CPU", r.stderr)


class GpuBenchWhenTheTraceFails(unittest.TestCase):
    """gpu_bench.py with a fabtrain that writes no trace (a wrapper drops --trace-steps): the bench
    must still print and write its figures, then fail naming the trace (on a GPU machine the figures
    are minutes of scarce device time; a lost trace must not lose them)."""

    def test_the_figures_are_written_and_the_bench_fails_naming_the_trace(self):
        with tempfile.TemporaryDirectory(prefix="fabkit-gpu-bench-") as d:
            wrapper = os.path.join(d, "fabtrain-without-trace")
            with open(wrapper, "w") as f:
                f.write(f"#!{sys.executable}\n"
                        "import os, sys\n"
                        "a = sys.argv[1:]\n"
                        "i = a.index('--trace-steps')\n"
                        "del a[i:i + 2]\n"
                        f"os.execv({ARGS.fabtrain!r}, [{ARGS.fabtrain!r}] + a)\n")
            os.chmod(wrapper, 0o755)
            figures = os.path.join(d, "figures.json")
            r = subprocess.run([ARGS.python, os.path.join(HERE, "gpu_bench.py"), "--fabtrain", wrapper,
                                "--device", "cpu", "--reference", "plain", "--smoke", "--rounds", "1", "--steps", "5",
                                "--warmup", "3", "--trace-steps", "1"], capture_output=True, text=True, timeout=300,
                               env=dict(os.environ, OMP_NUM_THREADS="1", FABKIT_BENCH_JSON=figures))
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("--trace-steps: fabtrain's traces in", r.stderr)
            self.assertIn("the figures above are complete", r.stderr)
            self.assertIn("round 1: fabtrain", r.stdout)
            with open(figures) as f:
                doc = json.load(f)
            self.assertGreater(doc["rounds"][0]["fabtrain"]["tokens_per_s"], 0)
            self.assertIsNone(doc["trace"])
            self.assertIn("trace: no such file or folder: was fabtrain run with --trace-steps", doc["trace_error"])


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--fabtrain", required=True)
    p.add_argument("--python", default=sys.executable, help="a python3 with torch, for gpu_bench.py")
    ARGS, rest = p.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
