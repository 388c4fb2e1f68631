"""Issue 37: an all-reduce runner that aborts, or hangs, must not take the agent down nor cancel
the steps after it. The agents run each transport in a child (`fabcheck agent-runner`, docs/pair.md
"Runner children"); the test hook FABKIT_TEST_RUNNER_FAULT, set in the agents' environment by the
launcher template, makes one transport's child abort (as Debian's Gloo did over soft-RoCE: SIGABRT
from std::terminate) or hang after its first size. Two network-namespace hosts
(tests/integration/netns/netns.py).

Run: test_pair_runner_child.py /path/to/fabcheck   (root; skips with the reason otherwise)
"""
import json
import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
from json_schemas import schema_for_error_or, validate_doc  # noqa: E402
import netns  # noqa: E402

FABCHECK = None
TIMEOUT_MS = 4000
FAST = ["--pings", "100", "--bandwidth-ms", "200", "--sizes", "4K,64K", "--iters", "3",
        "--warmup-iters", "1", "--timeout-ms", str(TIMEOUT_MS)]
# raw-exchange runs before the faulty fabkit-socket, gloo-tcp after it.
TRANSPORTS = "raw-exchange,fabkit-socket,gloo-tcp"


class RunnerChildTest(unittest.TestCase):
    def setUp(self):
        self.world = netns.NetnsWorld(hosts=2, decoys=False, controller=True).__enter__()
        self.addCleanup(self.world.close)

    def pair(self, fault, *extra, json_out=True):
        w = self.world
        launcher = "ip netns exec {host} env FABKIT_TEST_RUNNER_FAULT=%s" % fault
        argv = ["ip", "netns", "exec", w.ctl, FABCHECK, "pair", *w.hosts, "--launcher", launcher,
                "--transports", TRANSPORTS, *FAST, *extra] + (["--json"] if json_out else [])
        t0 = time.monotonic()
        p = subprocess.run(argv, capture_output=True, text=True, timeout=180)
        return p, time.monotonic() - t0

    def doc(self, p):
        try:
            d = json.loads(p.stdout)
        except ValueError:
            self.fail("not JSON (exit %d): %s\nstderr: %s" % (p.returncode, p.stdout[:2000], p.stderr[-2000:]))
        validate_doc(d, schema_for_error_or(d, "pair.schema.json"))
        return d

    def test_aborting_runner_is_named_and_cancels_nothing(self):
        p, elapsed = self.pair("fabkit-socket:abort", "--transport-timeout-ms", "30000")
        d = self.doc(p)
        self.assertEqual(1, p.returncode, d["findings"])
        pair = d["pair"]
        # Every step ran, none was skipped: the agents survived their runner's abort.
        self.assertTrue(all(s["status"] == "ok" for s in pair["steps"]), pair["steps"])
        steps = [s["step"] for s in pair["steps"]]
        self.assertLess(steps.index("rdma_rc"), steps.index("allreduce:raw-exchange"), steps)
        runs = {t["transport"]: t for t in pair["transports"]}
        self.assertEqual("ok", runs["raw-exchange"]["status"], runs["raw-exchange"])
        self.assertEqual("ok", runs["gloo-tcp"]["status"], runs["gloo-tcp"])  # after the crash
        crashed = runs["fabkit-socket"]
        self.assertEqual("failed", crashed["status"])
        # Each rank's child aborts after its first size; a rank whose peer died first may fail
        # on the closed connection instead, before its own hook fires.
        hit = []
        for host, rank in zip(self.world.hosts, crashed["ranks"]):
            x = rank["extra"]
            if x["error"] != "runner_crashed":
                self.assertEqual("failed", rank["status"], rank)
                continue
            hit.append(host)
            self.assertTrue(x["child_exit"].startswith("killed by SIGABRT (signal 6: Aborted)"), x)
            self.assertIn("test hook FABKIT_TEST_RUNNER_FAULT asks for 'abort'", x["last_words"])
            self.assertEqual((1, 2), (x["sizes_done"], x["sizes_total"]))
        self.assertIn(self.world.hosts[0], hit, crashed["ranks"])
        f = [x for x in d["findings"] if x["code"] == "pair.transport_crashed"]
        self.assertEqual(1, len(f), d["findings"])
        self.assertEqual("fail", f[0]["severity"])
        self.assertEqual("fabkit-socket on " + ", ".join(hit), f[0]["subject"])
        self.assertIn("killed by SIGABRT", f[0]["message"])
        self.assertIn("after 1 of 2 sizes", f[0]["message"])
        self.assertNotIn("pair.agent_lost", [x["code"] for x in d["findings"]])
        self.assertIn(d["pair"]["recommended"]["transport"], ("gloo-tcp",))
        self.assertLess(elapsed, 90)
        time.sleep(0.2)
        self.assertEqual([], self.world.pids(0) + self.world.pids(1))  # no runner left behind

    def test_text_report_lists_the_crash_that_made_exit_1(self):
        p, _ = self.pair("fabkit-socket:terminate", "--transport-timeout-ms", "30000", json_out=False)
        self.assertEqual(1, p.returncode, p.stdout + p.stderr)
        out = p.stdout
        findings = out[out.index("\nfindings\n"):]
        self.assertIn("pair.transport_crashed", findings)
        self.assertIn("killed by SIGABRT", findings)
        # std::terminate's own words, from the child's stderr.
        self.assertIn("terminate called after throwing an instance of 'std::runtime_error'", findings)
        self.assertIn("result: findings at warn or worse (exit 1)", out)

    def test_hanging_runner_is_killed_at_the_sweep_bound_and_the_rest_runs(self):
        p, elapsed = self.pair("fabkit-socket:hang", "--transport-timeout-ms", "6000")
        d = self.doc(p)
        runs = {t["transport"]: t for t in d["pair"]["transports"]}
        hung = runs["fabkit-socket"]
        self.assertEqual("failed", hung["status"])
        rank0 = hung["ranks"][0]
        self.assertEqual("runner_timeout", rank0["extra"]["error"], rank0)
        # the sweep's bound: --transport-timeout-ms less a tenth, for the answer's way back
        self.assertIn("within the sweep's bound of 5400 ms after 1 of 2 sizes", rank0["reason"])
        self.assertIn("asks for 'hang'", rank0["reason"])
        self.assertEqual("ok", runs["gloo-tcp"]["status"], runs["gloo-tcp"])
        self.assertTrue(all(s["status"] == "ok" for s in d["pair"]["steps"]), d["pair"]["steps"])
        self.assertLess(elapsed, 60)
        time.sleep(0.2)
        self.assertEqual([], self.world.pids(0) + self.world.pids(1))

    def test_lost_agent_is_named_and_the_steps_it_cost_say_why(self):
        # The agent itself dies (SIGABRT, while its runner child hangs): the step names the host
        # and the signal, the steps after it are skipped naming that loss, the runner child dies
        # with its agent, and the text report lists both.
        w = self.world
        launcher = "ip netns exec {host} env FABKIT_TEST_RUNNER_FAULT=fabkit-socket:hang"
        argv = ["ip", "netns", "exec", w.ctl, FABCHECK, "pair", *w.hosts, "--launcher", launcher,
                "--transports", TRANSPORTS, *FAST, "--transport-timeout-ms", "10000"]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def cmdline(pid):
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    return f.read().split(b"\0")
            except OSError:
                return []
        agent = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and agent is None:
            cmds = {pid: cmdline(pid) for pid in w.pids(1)}
            if any(b"agent-runner" in c for c in cmds.values()):
                agent = [pid for pid, c in cmds.items() if b"agent" in c and b"agent-runner" not in c]
            time.sleep(0.05)
        self.assertTrue(agent, "no runner child appeared on host 1")
        time.sleep(0.3)  # past its first size: the hook hangs there
        os.kill(agent[0], 6)
        out, err = p.communicate(timeout=120)
        if os.environ.get("FABKIT_TEST_SHOW"):
            print(out)
        self.assertEqual(1, p.returncode, out + err)
        self.assertIn("pair.agent_lost", out)
        self.assertIn("killed by SIGABRT (signal 6: Aborted)", out)
        incomplete = out[out.index("steps that did not complete"):out.index("\nfindings\n")]
        self.assertIn("allreduce:gloo-tcp", incomplete)
        self.assertIn("not run: the agent on %s was lost in step 'allreduce:fabkit-socket'" % w.hosts[1],
                      incomplete)
        time.sleep(0.3)
        self.assertEqual([], w.pids(0) + w.pids(1))  # the hung runner died with its agent

    def test_runner_subcommand_by_hand_says_what_it_is(self):
        p = subprocess.run([FABCHECK, "agent-runner"], capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(2, p.returncode)
        self.assertIn("internal to `fabcheck agent`", p.stderr)

    def test_bad_rc_flags_are_usage_errors(self):
        w = self.world
        for flags, words in ((["--rc-iters", "0"], "--rc-iters 0: give 1..1000000"),
                             (["--rc-size", "32M"], "--rc-size '32M'"),
                             (["--rc-lat-iters", "-5"], "--rc-lat-iters -5")):
            p = subprocess.run([FABCHECK, "pair", *w.hosts, "--launcher", "ip netns exec {host}", *flags],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(2, p.returncode, p.stderr)
            self.assertIn(words, p.stderr)
            self.assertEqual([], w.pids(0) + w.pids(1))  # refused before anything started


if __name__ == "__main__":
    FABCHECK = os.path.abspath(sys.argv.pop(1))
    ok, why = netns.have_root_and_netns()
    if not ok:
        print("SKIP: " + why)
        sys.exit(77)
    unittest.main(verbosity=2)
