"""The finding catalogue is complete and current: every finding code the source can emit is in
docs/findings.md, and docs/findings.md is what scripts/gen-findings-doc makes from docs/findings/.
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
# info("code", ...), warn("code", ...), fail("code", ...) — the only ways to make a Finding. Not
# member calls such as reader.fail("field", ...), which name a field, not a finding.
CALL = re.compile(r'(?<![.>\w])(?:info|warn|fail)\(\s*"([a-z0-9_]+(?:\.[a-z0-9_]+)+)"')
SOURCE_DIRS = ["probes", "topo", "fabric", "profile", "cli", "verbs", "trainer", "common", "slurm", "reports"]


def source_codes():
    codes = {}
    for d in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
            for name in files:
                if not name.endswith((".cc", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, errors="replace") as f:
                    for m in CALL.finditer(f.read()):
                        codes.setdefault(m.group(1), path)
    return codes


class DocsConsistent(unittest.TestCase):
    def test_every_finding_code_is_catalogued(self):
        with open(os.path.join(ROOT, "docs", "findings.md")) as f:
            doc = f.read()
        codes = source_codes()
        self.assertTrue(codes, "found no finding codes at all: the pattern is broken")
        missing = sorted("%s (%s)" % (c, os.path.relpath(p, ROOT))
                         for c, p in codes.items() if "`%s`" % c not in doc)
        self.assertEqual(missing, [], "finding codes missing from docs/findings/*.md")

    def test_generated_catalogue_is_current(self):
        with open(os.path.join(ROOT, "docs", "findings.md")) as f:
            before = f.read()
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["cp", "-r", os.path.join(ROOT, "docs"), os.path.join(ROOT, "scripts"), tmp],
                           check=True)
            subprocess.run([os.path.join(tmp, "scripts", "gen-findings-doc")], check=True)
            with open(os.path.join(tmp, "docs", "findings.md")) as f:
                after = f.read()
        self.assertEqual(before, after, "docs/findings.md is stale: run scripts/gen-findings-doc")


if __name__ == "__main__":
    unittest.main(verbosity=2)
