"""Golden tests of every deterministic `--json` output of fabcheck and fabtrain (tests/golden/
README.md): each case's output must satisfy its schema in docs/schema/ and, normalised, equal
expected/<name>.json exactly (a unified diff is printed when not). Also: every schema is a valid
draft 2020-12 schema, every case has a golden and every golden a case, and the saved report
fixtures that `fabcheck report` reads satisfy their schemas.

usage: test_golden.py --fabcheck PATH [--fabtrain PATH] [unittest args]"""
import argparse
import json
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_lib  # noqa: E402
from cases import CASES  # noqa: E402
from fabtrain_cases import FABTRAIN_CASES  # noqa: E402

BINARIES = {}
STORE = golden_lib.load_schemas()
ALL_CASES = CASES + FABTRAIN_CASES
UPDATE_HINT = ("if the change is intended, regenerate with tests/golden/update --fabcheck ... "
               "--fabtrain ... and read the diff before committing it")


class Golden(unittest.TestCase):
    maxDiff = None

    def check_case(self, case):
        if case["binary"] == "fabtrain" and not BINARIES.get("fabtrain"):
            self.skipTest("fabtrain is not built here (no libtorch: FABKIT_HAVE_TORCH=0)")
        code, doc, err, tmp = golden_lib.run_case(case, BINARIES["fabcheck"], BINARIES["fabtrain"])
        try:
            golden_lib.validate(doc, case["schema"])
            if "schema_version" in doc or "kind" in doc:
                self.assertEqual(list(doc)[0], "schema_version", "schema_version is not the first key")
            if isinstance(doc.get("summary"), dict):
                self.assertEqual(code, doc["summary"]["exit_code"], "exit code vs summary.exit_code")
            if isinstance(doc.get("error"), dict):
                self.assertEqual(code, doc["error"]["exit_code"], "exit code vs error.exit_code")
            actual = golden_lib.render(case, code, doc, tmp)
        finally:
            shutil.rmtree(tmp)
        path = golden_lib.expected_path(case)
        self.assertTrue(os.path.exists(path), "%s has no golden; %s" % (case["name"], UPDATE_HINT))
        with open(path) as f:
            expected = f.read()
        if actual != expected:
            self.fail("%s differs from its golden (stderr: %s)\n%s\n%s" %
                      (case["name"], err.strip() or "empty", golden_lib.diff(expected, actual, case["name"]),
                       UPDATE_HINT))


def add_case_tests():
    for case in ALL_CASES:
        name = "test_" + case["name"].replace("-", "_").replace(".", "_")
        setattr(Golden, name, lambda self, c=case: self.check_case(c))


add_case_tests()


class Catalogue(unittest.TestCase):
    def test_every_golden_has_a_case_and_names_are_unique(self):
        names = [c["name"] for c in ALL_CASES]
        self.assertEqual(len(names), len(set(names)), "duplicate case names")
        files = {f[:-len(".json")] for f in os.listdir(golden_lib.EXPECTED_DIR) if f.endswith(".json")}
        self.assertEqual(files - set(names), set(), "goldens without a case: delete them")

    def test_every_case_names_an_existing_schema(self):
        for c in ALL_CASES:
            self.assertIn(c["schema"], STORE, c["name"])

    def test_saved_report_fixtures_satisfy_their_schemas(self):
        """The inputs of `fabcheck report` (a real pair run, the hand-written cluster report, the
        synthetic node report with a gpu_active section, a node report of the NVML fake)."""
        by_kind = {"pair": "pair.schema.json", "cluster": "cluster-report.schema.json", "node": "node.schema.json"}
        d = os.path.join(golden_lib.SOURCE_ROOT, "tests", "fixtures", "reports")
        seen = 0
        for name in sorted(os.listdir(d)):
            if name.endswith(".json"):
                with open(os.path.join(d, name)) as f:
                    doc = json.load(f)
                with self.subTest(fixture=name):
                    golden_lib.validate(doc, by_kind[doc["kind"]])
                seen += 1
        self.assertGreaterEqual(seen, 2)

    def test_profile_fixtures_satisfy_the_profile_schema(self):
        d = os.path.join(golden_lib.SOURCE_ROOT, "tests", "fixtures", "profile")
        for name in ("cluster-ib.json", "cluster-roce.json"):
            with open(os.path.join(d, name)) as f:
                with self.subTest(fixture=name):
                    golden_lib.validate(json.load(f), "cluster.schema.json")

    def test_schemas_reject_what_they_should(self):
        """The schemas are not vacuous: a wrong type, a missing required key and an unknown
        severity in a real golden are each refused."""
        import jsonschema
        with open(os.path.join(golden_lib.EXPECTED_DIR, "node-sysroot-ib-roce.json")) as f:
            doc = json.load(f)["output"]
        doc["generated_at"], doc["build"] = "2026-01-01T00:00:00Z", {
            "fabkit_version": "x", "cuda": False, "nccl": False, "verbs": False, "torch": False}
        doc["locality"]["load_ms"], doc["locality"]["hwloc_version"] = 1.0, "2.9.0"
        doc["gpus"]["query_ms"] = 0.1
        doc["kernel_log"]["read_ms"] = 0.2
        golden_lib.validate(doc, "node.schema.json")
        for path, value in ((("rdma", "devices", 0, "ports", 0, "rate_gbps"), "fast"),
                            (("findings", 0, "severity"), "error"),
                            (("net", "interfaces", 0, "kind"), "wifi"),
                            (("pcie", "pci_bus_present"), "no"),
                            (("kernel_log", "readable"), 1)):
            bad = json.loads(json.dumps(doc))
            target = bad
            for k in path[:-1]:
                target = target[k]
            target[path[-1]] = value
            with self.subTest(path=path):
                with self.assertRaises(jsonschema.ValidationError):
                    golden_lib.validate(bad, "node.schema.json")
        bad = json.loads(json.dumps(doc))
        del bad["limits"]["memlock_bytes"]
        with self.assertRaises(jsonschema.ValidationError):
            golden_lib.validate(bad, "node.schema.json")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fabcheck", required=True)
    ap.add_argument("--fabtrain", help="absent when fabtrain is not built (no libtorch)")
    args, rest = ap.parse_known_args()
    BINARIES.update(fabcheck=os.path.abspath(args.fabcheck),
                    fabtrain=os.path.abspath(args.fabtrain) if args.fabtrain else None)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
