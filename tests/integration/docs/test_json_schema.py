"""`fabcheck node --json` on this machine validates against docs/schema/node.schema.json (the
envelope and every section), and a usage error under --json against docs/schema/error.schema.json;
warn/fail findings all carry a fix. The fixture-based outputs of every command are golden-tested
in tests/golden/."""
import argparse
import json
import os
import subprocess
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from json_schemas import validate_doc  # noqa: E402

FABCHECK = None


class JsonSchema(unittest.TestCase):
    def test_node_report_matches_schema(self):
        r = subprocess.run([FABCHECK, "node", "--json"], stdout=subprocess.PIPE, text=True, timeout=60)
        self.assertIn(r.returncode, (0, 1))
        doc = json.loads(r.stdout)
        validate_doc(doc, "node.schema.json")
        self.assertEqual(list(doc)[0], "schema_version")
        self.assertEqual(r.returncode, doc["summary"]["exit_code"])
        for f in doc["findings"]:
            if f["severity"] != "info":
                self.assertTrue(f["fix"], "finding %s has no fix" % f["code"])

    def test_usage_error_is_json_with_exit_2(self):
        r = subprocess.run([FABCHECK, "node", "--json", "--no-such-flag"], stdout=subprocess.PIPE,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        doc = json.loads(r.stdout)
        validate_doc(doc, "error.schema.json")
        self.assertIn("--no-such-flag", doc["error"]["message"])

    def test_missing_sysroot_is_usage_error_naming_it(self):
        r = subprocess.run([FABCHECK, "node", "--json", "--sysroot", "/nonexistent/fabkit"],
                           stdout=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent/fabkit", json.loads(r.stdout)["error"]["message"])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabcheck", required=True)
    args, rest = ap.parse_known_args()
    FABCHECK = os.path.abspath(args.fabcheck)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
