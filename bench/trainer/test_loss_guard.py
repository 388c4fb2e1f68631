#!/usr/bin/env python3
"""The loss guard of the fabtrain benches (loss_guard.py): on fabtrain and the PyTorch reference
trained from the same weights on the same batches it passes, and given a fabtrain that trains a
deliberately different model (the same config, weights of another seed: what a fabtrain that
random-initialised instead of loading model.safetensors would train) it fails the bench with a
non-zero exit naming the step. Both benches: run_bench.py (the CPU comparison) and gpu_bench.py
(--device cpu, its fp32 rehearsal). Plus the pieces: std::mt19937_64 (which fabtrain's sampler
uses) against the value the C++ standard fixes, check()'s verdicts, and gpu_bench.py's peak per
GPU part for MFU.

usage: test_loss_guard.py --fabtrain FABTRAIN --python PYTHON_WITH_TORCH"""
import argparse
import os
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import loss_guard  # noqa: E402

ARGS = None

# A fabtrain that trains another model: it copies the --model folder, replaces its weights by those
# of seed 1 (the bench wrote seed 0's) and runs the real fabtrain on the copy.
OTHER_MODEL_FABTRAIN = """#!{python}
import json, os, shutil, sys
sys.path.insert(0, {here!r})
import loss_guard
argv = sys.argv[1:]
i = argv.index("--model") + 1
other = argv[i].rstrip("/") + "-other"
if not os.path.exists(other):
    shutil.copytree(argv[i], other)
    config = json.load(open(os.path.join(other, "config.json")))
    weights, _ = loss_guard.hf_init_weights(config, seed=1)
    loss_guard.write_safetensors(os.path.join(other, "model.safetensors"), weights)
argv[i] = other
os.execv({fabtrain!r}, [{fabtrain!r}] + argv)
"""

RUN_BENCH = ["--smoke", "--rounds", "1", "--steps", "6", "--warmup", "2", "--ranks", "1", "--no-memory",
             "--hidden", "64", "--layers", "2", "--vocab", "512", "--max-length", "32", "--micro-batch", "2",
             "--threads", "1"]
GPU_BENCH = ["--device", "cpu", "--smoke", "--rounds", "1", "--steps", "6", "--warmup", "2", "--reference", "plain"]


def run(script, fabtrain, extra):
    return subprocess.run([ARGS.python, os.path.join(HERE, script), "--fabtrain", fabtrain] + extra,
                          capture_output=True, text=True, timeout=600, env=dict(os.environ, OMP_NUM_THREADS="1"))


class Pieces(unittest.TestCase):
    def test_mt19937_64_gives_the_value_the_cxx_standard_fixes(self):
        gen = loss_guard.Mt19937_64(5489)
        for _ in range(9999):
            gen()
        self.assertEqual(gen(), 9981545732273789042)  # [rand.predef]: the 10000th of a default mt19937_64

    def test_step_batches_walk_every_example_once_an_epoch_then_reshuffle(self):
        b = loss_guard.step_batches(8, 2, 8, seed=0)
        self.assertEqual(sorted(i for x in b[:4] for i in x), list(range(8)))
        self.assertEqual(sorted(i for x in b[4:] for i in x), list(range(8)))
        self.assertNotEqual(b[:4], b[4:])
        two = [loss_guard.step_batches(8, 2, 2, seed=0, rank=r, world=2) for r in (0, 1)]
        self.assertEqual(sorted(i for r in two for x in r for i in x), list(range(8)))

    def test_check_rejects_a_step_out_of_tolerance_a_nan_and_unequal_lengths(self):
        ref = [10.0, 9.9, 9.8]
        self.assertAlmostEqual(loss_guard.check([10.0, 9.90005, 9.8], ref, "float32"), 5.05e-6, places=8)
        with self.assertRaisesRegex(loss_guard.LossMismatch, "step 2: fabtrain's loss 9.900200"):
            loss_guard.check([10.0, 9.9002, 9.8], ref, "float32")
        self.assertLess(loss_guard.check([10.0, 9.9002, 9.8], ref, "bfloat16"), 2e-3)
        with self.assertRaisesRegex(loss_guard.LossMismatch, "step 3"):
            loss_guard.check([10.0, 9.9, float("nan")], ref, "bfloat16")
        with self.assertRaisesRegex(loss_guard.LossMismatch, "did not train the same steps"):
            loss_guard.check([10.0, 9.9], ref, "float32")

    def test_safetensors_written_here_read_back_bit_for_bit(self):
        import torch
        w = {"b": torch.randn(3, 5), "a": torch.randn(7)}
        with tempfile.TemporaryDirectory() as d:
            loss_guard.write_safetensors(os.path.join(d, "m.safetensors"), w)
            back = loss_guard.read_safetensors(os.path.join(d, "m.safetensors"))
        self.assertEqual(set(back), {"a", "b"})
        for k in w:
            self.assertTrue(torch.equal(back[k], w[k]))


class SkuPeak(unittest.TestCase):
    def test_each_hopper_part_gets_its_own_dense_bf16_peak(self):
        import gpu_bench
        for name, tflops in (("NVIDIA H100 80GB HBM3", 989.0), ("NVIDIA H100 PCIe", 756.0), ("NVIDIA H100 NVL", 835.0),
                             ("NVIDIA H200", 989.0), ("NVIDIA H200 NVL", 835.0)):
            self.assertEqual(gpu_bench.peak_tflops_of(name), tflops, name)
        self.assertIsNone(gpu_bench.peak_tflops_of("NVIDIA H800"))  # unknown: the bench asks for --peak-tflops


class GuardOnTheBenches(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = tempfile.TemporaryDirectory(prefix="fabkit-loss-guard-")
        cls.other = os.path.join(cls.d.name, "fabtrain-other-model")
        with open(cls.other, "w") as f:
            f.write(OTHER_MODEL_FABTRAIN.format(python=ARGS.python, here=HERE, fabtrain=os.path.abspath(ARGS.fabtrain)))
        os.chmod(cls.other, os.stat(cls.other).st_mode | stat.S_IXUSR)

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def test_cpu_bench_passes_when_both_train_the_same_model(self):
        r = run("run_bench.py", ARGS.fabtrain, RUN_BENCH)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-3000:])
        self.assertIn("loss guard passed", r.stdout)

    def test_cpu_bench_fails_on_a_deliberately_different_model(self):
        r = run("run_bench.py", self.other, RUN_BENCH)
        self.assertNotEqual(r.returncode, 0, r.stdout[-2000:])
        self.assertIn("loss guard: 1 rank(s), round 1, fabtrain vs torch: step 1:", r.stderr)
        self.assertNotIn("ratio median", r.stdout)  # no figure from runs that computed different things

    def test_gpu_bench_rehearsal_passes_when_both_train_the_same_model(self):
        r = run("gpu_bench.py", ARGS.fabtrain, GPU_BENCH)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-3000:])
        self.assertIn("loss guard passed", r.stdout)

    def test_gpu_bench_rehearsal_fails_on_a_deliberately_different_model(self):
        r = run("gpu_bench.py", self.other, GPU_BENCH)
        self.assertNotEqual(r.returncode, 0, r.stdout[-2000:])
        self.assertIn("loss guard: round 1: step 1:", r.stderr)
        self.assertNotIn("median fabtrain/eager", r.stdout)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--fabtrain", required=True)
    p.add_argument("--python", default=sys.executable)
    ARGS, rest = p.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest)
