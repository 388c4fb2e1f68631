"""Deeply nested JSON given to every reader of the real binaries (issue #19): a profile nested
100k levels to validate, emit-env and fabtrain --profile; a node report with a nested section to
`fabcheck profile` and `fabcheck report`; input_ids nested 1e6 levels to fabtrain --data, with and
without --skip-bad-lines; nested config.json fields. Each used to overflow the stack (exit 139);
each must now be a usage error (exit 2) naming the file, the limit and where, or (with
--skip-bad-lines) a skipped line.

Run: test_deep_json.py --fabcheck PATH [--fabtrain PATH]   (fabtrain cases skip without it)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

FABCHECK = FABTRAIN = None
LIMIT_TEXT = "nested deeper than 128 levels at "


def nested(depth, inner="1"):
    return "[" * depth + inner + "]" * depth


def run(argv, timeout=300):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)


class DeepJson(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="fabkit-deep-json-")
        node = run([FABCHECK, "node", "--json"])
        cls.node_report = json.loads(node.stdout)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def expect_usage_error(self, r, path, where):
        both = r.stdout + r.stderr
        self.assertEqual(r.returncode, 2, "exit %d (139/-11: stack overflow)\n%s" % (r.returncode, both[-3000:]))
        self.assertIn(path, both)
        self.assertIn(LIMIT_TEXT + where, both)

    def deep_profile(self):
        # A profile whose provenance holds a value nested 100k levels deep (~200 KB).
        return self.write("deep-profile.json", '{"schema_version": 1, "kind": "fabkit-profile", '
                          '"provenance": {"x": %s}}' % nested(100000))

    def test_validate_refuses_a_deep_profile(self):
        p = self.deep_profile()
        self.expect_usage_error(run([FABCHECK, "validate", p]), p, ".provenance.x[0][0]")

    def test_emit_env_refuses_a_deep_profile(self):
        p = self.deep_profile()
        self.expect_usage_error(run([FABCHECK, "emit-env", "--profile", p, "--host", "h"]), p,
                                ".provenance.x[0][0]")

    def test_profile_refuses_a_node_report_with_a_deep_section(self):
        doc = dict(self.node_report)
        doc["net"] = "@DEEP@"
        p = self.write("deep-node.json", json.dumps(doc).replace('"@DEEP@"', nested(100000)))
        out = os.path.join(self.dir, "cluster.json")
        self.expect_usage_error(run([FABCHECK, "profile", "--out", out, p]), p, ".net[0][0]")
        self.assertFalse(os.path.exists(out), "a profile was written from a refused report")
        self.expect_usage_error(run([FABCHECK, "report", p]), p, ".net[0][0]")

    # fabtrain (built with LibTorch only)
    def need_fabtrain(self):
        if not FABTRAIN:
            self.skipTest("fabtrain not built (configured with -DFABKIT_WITH_TORCH=OFF)")

    def model_dir(self, name, **override):
        d = os.path.join(self.dir, name)
        os.makedirs(d)
        cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32,
               "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_key_value_heads": 2, "vocab_size": 272, "max_position_embeddings": 64,
               "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "torch_dtype": "float32",
               "bos_token_id": 256, "eos_token_id": 257}
        text = json.dumps(cfg)
        for k, v in override.items():
            text = text[:-1] + ', "%s": %s}' % (k, v)
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write(text)
        return d

    def data(self, name, deep_line):
        lines = [json.dumps({"input_ids": [(i * 7 + k) % 250 for k in range(17)]}) for i in range(8)]
        if deep_line:
            lines.insert(3, '{"input_ids": %s}' % nested(1000000))
        return self.write(name, "\n".join(lines) + "\n")

    def train(self, model, data, *extra):
        out = tempfile.mkdtemp(dir=self.dir)
        return run([FABTRAIN, "train", "--model", model, "--data", data, "--output", out,
                    "--max-steps", "1", "--max-length", "16", "--micro-batch-size", "2",
                    "--format", "input_ids", "--device", "cpu", *extra])

    def test_fabtrain_refuses_a_deep_profile(self):
        self.need_fabtrain()
        p = self.deep_profile()
        r = self.train(self.model_dir("m-profile"), self.data("ok.jsonl", False), "--profile", p)
        self.expect_usage_error(r, p, ".provenance.x[0][0]")

    def test_fabtrain_refuses_deep_input_ids(self):
        self.need_fabtrain()
        d = self.data("deep.jsonl", True)
        self.expect_usage_error(self.train(self.model_dir("m-data"), d), d + ":4", ".input_ids[0][0]")

    def test_fabtrain_skips_a_deep_line_when_asked(self):
        self.need_fabtrain()
        d = self.data("deep-skip.jsonl", True)
        r = self.train(self.model_dir("m-skip"), d, "--skip-bad-lines")
        both = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, "exit %d\n%s" % (r.returncode, both[-3000:]))
        self.assertIn(LIMIT_TEXT + ".input_ids[0][0]", both)  # the skipped line's reason is logged

    def test_fabtrain_refuses_deep_config_fields(self):
        self.need_fabtrain()
        m = self.model_dir("m-config", rope_scaling=nested(100000, "{}"))
        cfg = os.path.join(m, "config.json")
        self.expect_usage_error(self.train(m, self.data("ok2.jsonl", False)), cfg, ".rope_scaling[0][0]")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabcheck", required=True)
    ap.add_argument("--fabtrain")
    args, rest = ap.parse_known_args()
    FABCHECK = os.path.abspath(args.fabcheck)
    FABTRAIN = os.path.abspath(args.fabtrain) if args.fabtrain else None
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
