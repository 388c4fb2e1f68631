"""fabtrain applies and checks the profile before any communicator exists (issue #5, "Launch and
fabric"): a profile made from this node lets it train; a profile recording an interface this node
does not have makes it refuse with the finding and its fix, before training; --skip-validate
overrides and says so. The profile comes from the real `fabcheck profile`.
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


def run(argv, timeout=300, env=None):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, env=env)


class FabtrainProfile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="fabkit-fabtrain-profile-")
        model = os.path.join(cls.dir, "model")
        os.makedirs(model)
        # A config-only directory: fabtrain starts from a seeded random initialisation.
        with open(os.path.join(model, "config.json"), "w") as f:
            json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32,
                       "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                       "num_key_value_heads": 2, "vocab_size": 272, "max_position_embeddings": 64,
                       "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "torch_dtype": "float32",
                       "bos_token_id": 256, "eos_token_id": 257}, f)
        cls.model = model
        cls.data = os.path.join(cls.dir, "train.jsonl")
        with open(cls.data, "w") as f:
            for i in range(32):
                f.write(json.dumps({"input_ids": [(i * 7 + k) % 250 for k in range(17)]}) + "\n")
        # This node's report, and a copy whose interfaces were renamed: a node that drifted.
        node = run([FABCHECK, "node", "--json"])
        report = json.loads(node.stdout)
        cls.good_report = os.path.join(cls.dir, "node.json")
        with open(cls.good_report, "w") as f:
            json.dump(report, f)
        text = json.dumps(report)
        for iface in report["net"]["interfaces"]:
            if iface["name"] != "lo":
                text = text.replace('"%s"' % iface["name"], '"ghost%s"' % iface["name"][-1:])
        cls.drift_report = os.path.join(cls.dir, "node-drifted.json")
        with open(cls.drift_report, "w") as f:
            f.write(text)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def profile(self, report, name):
        out = os.path.join(self.dir, name)
        r = run([FABCHECK, "profile", "--out", out, report])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return out

    def train(self, profile, *extra):
        out = tempfile.mkdtemp(dir=self.dir)
        r = run([FABTRAIN, "train", "--profile", profile, "--model", self.model, "--data", self.data,
                 "--output", out, "--max-steps", "1", "--max-length", "16", "--micro-batch-size", "2",
                 "--format", "input_ids", "--device", "cpu", *extra])
        return r, os.path.exists(os.path.join(out, "metrics.jsonl"))

    def test_matching_profile_trains(self):
        r, trained = self.train(self.profile(self.good_report, "good.json"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(trained, "no metrics.jsonl: no step ran")

    def test_drifted_node_is_refused_before_training(self):
        p = self.profile(self.drift_report, "drifted.json")
        r, trained = self.train(p)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertFalse(trained, "a step ran although the node disagrees with the profile")
        both = r.stdout + r.stderr
        self.assertIn("refusing to start", both)
        self.assertIn("ghost", both)  # names the interface the profile recorded
        self.assertIn("--skip-validate", both)

    def test_skip_validate_overrides_and_says_so(self):
        p = self.profile(self.drift_report, "drifted2.json")
        r, trained = self.train(p, "--skip-validate")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(trained)
        self.assertIn("--skip-validate", r.stdout + r.stderr)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabcheck", required=True)
    ap.add_argument("--fabtrain", required=True)
    args, rest = ap.parse_known_args()
    FABCHECK, FABTRAIN = os.path.abspath(args.fabcheck), os.path.abspath(args.fabtrain)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
