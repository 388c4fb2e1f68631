"""fabcheck pair under attack, on network-namespace hosts (tests/integration/netns/netns.py), each
test the reproduction of an attack of issue #19:

  - slow-loris on the agent's control port: 500 connections held (slow_loris.py, put in front of
    the port by loris_launcher.py before the controller connects); the real controller still
    connects and measures;
  - slow-loris on a TCP test server: 500 connections held on the peer's test server of the link
    that is measured later; that link is still measured in full;
  - a compromised peer (hostile_agent.py) reports an address of a host outside the session as its
    own; the other agent never contacts it, and the report names the refusal;
  - a SIGSTOPped agent during an all-reduce is named pair.agent_unresponsive within seconds, not
    after the transport timeout (300 s), and the peer's own failure stays in the report;
  - a weak user-set FABKIT_SESSION_TOKEN is refused by name (no namespaces needed).

Run: test_pair_attacks.py /path/to/fabcheck   (root for the namespace tests; they skip otherwise)
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
sys.path.insert(0, HERE)
import netns  # noqa: E402
import slow_loris_scenarios as scenarios  # noqa: E402

FABCHECK = None
HELD = 500


def findings(doc, code):
    return [f for f in doc.get("findings", []) if f["code"] == code]


class NetnsAttacks(unittest.TestCase):
    def setUp(self):
        ok, why = netns.have_root_and_netns()
        if not ok:
            self.skipTest(why)

    def test_500_held_connections_on_the_control_port_do_not_keep_the_controller_out(self):
        result = scenarios.control_port(FABCHECK, HELD)
        self.assertEqual(HELD, result["held"], result)  # all held when the controller connected
        self.assertEqual("ok", result["outcome"], result)

    def test_500_held_connections_on_a_test_server_do_not_fail_its_link(self):
        result = scenarios.test_server(FABCHECK, HELD)
        self.assertEqual("ok", result["outcome"], result)
        self.assertEqual(HELD, result["held"], result)  # all held before the link's turn

    def test_a_compromised_peer_cannot_point_the_other_agent_at_an_outside_host(self):
        with netns.NetnsWorld(hosts=3, decoys=True, controller=True) as w:
            victim_addr, victim_port = "198.18.9.9", 4444
            w.run(2, "ip", "addr", "add", victim_addr + "/24", "dev", "fab0")
            victim = subprocess.Popen(["ip", "netns", "exec", w.hosts[2], sys.executable, "-c", VICTIM,
                                       victim_addr, str(victim_port)], stdout=subprocess.PIPE, text=True)
            self.addCleanup(victim.kill)
            self.assertEqual("listening", victim.stdout.readline().strip())
            launcher = "%s %s launch %s %s %s %d {host} ip netns exec {host}" % (
                sys.executable, os.path.join(HERE, "hostile_agent.py"), w.hosts[1], w.addr(1), victim_addr,
                victim_port)
            rc, doc, _ = scenarios.run_pair(FABCHECK, w, launcher, w.hosts[:2], "--transports", "none")
            victim.send_signal(signal.SIGTERM)
            accepted = int(victim.communicate(timeout=10)[0].strip() or "0")
            print("\n  connections the victim accepted: %d" % accepted, file=sys.stderr)
            self.assertEqual(0, accepted, "the agent on %s connected to the victim %s:%d" %
                             (w.hosts[0], victim_addr, victim_port))
            refused = [f for f in findings(doc, "pair.peer_address_refused") if victim_addr in f["subject"]]
            self.assertEqual(1, len(refused), doc["findings"])
            self.assertIn(w.hosts[1], refused[0]["subject"])
            self.assertIn("not on a subnet of %s's interfaces" % w.hosts[0], refused[0]["message"])
            self.assertNotIn(victim_addr, json.dumps(doc["pair"]["links"]))

    def test_a_stopped_agent_is_named_unresponsive_within_seconds_with_the_peers_failure_kept(self):
        with netns.NetnsWorld(hosts=2, decoys=True, controller=True) as w:
            # A long all-reduce (64 MiB x 200 over the veth) under the default 300 s transport bound,
            # after short TCP tests (their connections must not pass for the all-reduce's).
            p, t0 = scenarios.start_pair(FABCHECK, w, scenarios.LAUNCHER, w.hosts, "--transports", "raw-exchange",
                                         "--sizes", "64M", "--iters", "200", "--timeout-ms", "4000",
                                         "--bandwidth-ms", "100", "--pings", "100", defaults=False)
            stopped = scenarios.stop_when_allreduce_runs(w, 1, timeout_s=60)
            self.assertTrue(stopped, "the all-reduce never started")
            t_stop = time.monotonic()
            try:
                out, err = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                self.fail("the controller still waits for the stopped agent after 60 s")
            finally:
                for pid in stopped:
                    try:
                        os.kill(pid, signal.SIGCONT)
                    except ProcessLookupError:
                        pass
            after_stop = time.monotonic() - t_stop
            print("\n  stopped agent named after %.1f s" % after_stop, file=sys.stderr)
            doc = json.loads(out)
            self.assertLess(after_stop, 20)  # liveness 4 s + the peer's own 4 s bound, not 300 s
            steps = [s for s in doc["pair"]["steps"] if s["step"] == "allreduce:raw-exchange"]
            self.assertEqual(1, len(steps), doc["pair"]["steps"])
            step = steps[0]
            self.assertEqual("failed", step["status"])
            self.assertEqual("pair.agent_unresponsive", step["code"], step)
            self.assertEqual(w.hosts[1], step["host"])
            self.assertIn("rank 0 (%s) had reported" % w.hosts[0], step["error"])
            runs = {t["transport"]: t for t in doc["pair"]["transports"]}
            rank0 = runs["raw-exchange"]["ranks"][0]
            self.assertEqual("failed", rank0["status"], rank0)
            self.assertTrue(rank0.get("reason"), rank0)
            self.assertEqual(1, len(findings(doc, "pair.agent_unresponsive")), doc["findings"])


class WeakToken(unittest.TestCase):
    def test_a_weak_user_token_is_refused_by_name(self):
        env = dict(os.environ, FABKIT_SESSION_TOKEN="fabkit-cluster-secret")
        r = subprocess.run([FABCHECK, "agent", "--name", "x", "--bind", "127.0.0.1", "--accept-timeout-ms", "1000"],
                           env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(2, r.returncode, r.stderr)
        self.assertIn("wire.weak_token", r.stderr)
        self.assertIn("at least 24", r.stderr)
        self.assertIn("openssl rand -hex 32", r.stderr)
        self.assertEqual("", r.stdout)  # no hello: it never listened


# A TCP listener outside the session: counts the connections it accepts until SIGTERM.
VICTIM = r"""
import signal, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(64)
print("listening", flush=True)
n = 0
def done(*a):
    print(n, flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
while True:
    c, _ = s.accept()
    n += 1
    c.close()
"""


if __name__ == "__main__":
    FABCHECK = os.path.abspath(sys.argv.pop(1))
    # hostile_agent.py claims the controller's own release: the controller refuses any other
    # (pair.version_mismatch), and these attacks are about what comes after the hello.
    os.environ["HOSTILE_VERSION"] = subprocess.run([FABCHECK, "--version"], capture_output=True, text=True,
                                                   check=True).stdout.split()[1]
    unittest.main(verbosity=2)
