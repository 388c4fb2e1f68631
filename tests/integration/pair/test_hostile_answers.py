"""A compromised agent cannot crash the controller (issue #19): its answer is read with the depth
limit and typed, the step it spoils fails on the record naming the host and the field, and the
report is still written (exit 1: a failed step is a fail finding, never 3 or a signal).

Both agents run on this machine through tampering_agent.py (no namespaces, no root): it relays the
real agent's frames, handshake included, and replaces one host's facts answer.

Run: test_hostile_answers.py /path/to/fabcheck
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FABCHECK = None


class HostileAnswers(unittest.TestCase):
    def pair(self, mode):
        launcher = "/usr/bin/python3 %s %s hostb {host}" % (os.path.join(HERE, "tampering_agent.py"), mode)
        p = subprocess.run([FABCHECK, "pair", "hosta", "hostb", "--launcher", launcher, "--json",
                            "--timeout-ms", "10000", "--no-progress"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(p.returncode, 1, "exit %d (3 = internal error, negative = signal)\nstdout: %s"
                         "\nstderr: %s" % (p.returncode, p.stdout[:2000], p.stderr[-2000:]))
        doc = json.loads(p.stdout)
        facts = [s for s in doc["pair"]["steps"] if s["step"] == "facts"]
        self.assertEqual(len(facts), 1, doc["pair"]["steps"])
        step = facts[0]
        self.assertEqual((step["status"], step["code"], step["host"]), ("failed", "pair.agent_error", "hostb"), step)
        codes = [f["code"] for f in doc["findings"]]
        self.assertIn("pair.agent_error", codes)
        return step["error"]

    def test_nested_answer_fails_the_step_naming_the_field(self):
        error = self.pair("facts-nested")
        self.assertIn("nested deeper than 128 levels at .result.report.deep[0][0]", error)

    def test_wrong_typed_facts_fail_the_step_naming_the_field(self):
        error = self.pair("facts-typed")
        self.assertIn("unusable facts answer: field 'interfaces' is \"eth0\", not an object", error)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_hostile_answers.py /path/to/fabcheck")
    FABCHECK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
