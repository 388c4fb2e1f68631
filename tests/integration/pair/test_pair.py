"""fabcheck pair between two network-namespace hosts (tests/integration/netns/netns.py): each host
has the right interface (fab0, on a bridge) and two wrong ones (slow0: a tbf-shaped link; dead0:
reaches nothing). The controller runs in a third namespace on the bridge, agents are started with
--launcher 'ip netns exec {host} env NCCL_HOSTID={host}'. Failures (blocked port, rejecting port, killed agent, failed
launch, wrong token) must come back by name within the timeout.

Run: test_pair.py /path/to/fabcheck   (root; skips with the reason otherwise)
"""
import json
import os
import re
import secrets
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "support"))
from json_schemas import schema_for_error_or, validate_doc  # noqa: E402
import machine  # noqa: E402
import netns  # noqa: E402

FABCHECK = None
TIMEOUT_MS = 4000
# Each netns host gets an NCCL_HOSTID of its own (the agent's environment passes to the NCCL
# child): on a GPU machine the two hosts share the GPU, and NCCL refuses two ranks on one GPU of
# one host ("Duplicate GPU detected") unless they look like different hosts.
LAUNCHER = "ip netns exec {host} env NCCL_HOSTID={host}"
FAST = {"--pings": "1000", "--bandwidth-ms": "300", "--streams": "4", "--sizes": "4K,1M",
        "--iters": "5", "--warmup-iters": "1", "--timeout-ms": str(TIMEOUT_MS),
        "--transport-timeout-ms": "30000"}


def findings(doc, code=None):
    return [f for f in doc.get("findings", []) if code is None or f["code"] == code]


class PairTest(unittest.TestCase):
    def setUp(self):
        self.world = netns.NetnsWorld(hosts=2, decoys=True, controller=True).__enter__()
        self.addCleanup(self.world.close)

    def pair(self, *extra, hosts=None, wait=True):
        """extra: "--opt", "value" pairs overriding FAST (CLI11 refuses an option given twice)."""
        w = self.world
        opts = dict(FAST)
        opts.update(dict(zip(extra[::2], extra[1::2])))
        argv = ["ip", "netns", "exec", w.ctl, FABCHECK, "pair", *(hosts or w.hosts),
                "--launcher", LAUNCHER, "--json"]
        for k, v in opts.items():
            argv += [k, v]
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not wait:
            return p, t0
        return self.finish(p, t0)

    def finish(self, p, t0):
        out, err = p.communicate(timeout=120)
        elapsed = time.monotonic() - t0
        try:
            doc = json.loads(out)
        except ValueError:
            self.fail("not JSON (exit %d): %s\nstderr: %s" % (p.returncode, out[:2000], err[-2000:]))
        validate_doc(doc, schema_for_error_or(doc, "pair.schema.json"))  # docs/schema/
        return p.returncode, doc, elapsed

    def test_healthy_pair_picks_the_right_interface_with_sane_figures(self):
        rc, doc, elapsed = self.pair()
        p = doc["pair"]
        fails = [f for f in doc["findings"] if f["severity"] == "fail"]
        self.assertEqual([], fails, json.dumps(doc["findings"], indent=1))
        self.assertIn(rc, (0, 1))  # 1 only for warnings (e.g. a veth without a link speed)
        self.assertEqual(p["pair_version"], 1)
        self.assertTrue(all(s["status"] == "ok" for s in p["steps"]), p["steps"])
        chosen = [l for l in p["links"] if l["chosen"]]
        self.assertEqual(1, len(chosen))
        c = chosen[0]
        self.assertEqual(("fab0", "fab0"), (c["a"]["ifname"], c["b"]["ifname"]))
        self.assertEqual(p["recommended"]["interface_a"], "fab0")
        self.assertEqual(p["recommended"]["addr_a"], self.world.addr(0))
        # Self-consistent figures: p99 >= median > 0; bandwidth > 0 and below what two cores can
        # copy through a veth (well under 400 Gbit/s).
        self.assertEqual(c["pings"], 1000)
        self.assertGreater(c["rtt_median_us"], 0)
        self.assertGreaterEqual(c["rtt_p99_us"], c["rtt_median_us"])
        # Every ping in the histogram; the exact median and p99 inside the range it covers.
        hist = c["rtt_histogram"]
        self.assertEqual(sum(hist["counts"]) + hist["overflow"], 1000)
        self.assertLessEqual(hist["edges"][0], c["rtt_median_us"])
        self.assertLess(c["rtt_p99_us"], hist["edges"][-1] if hist["overflow"] == 0 else float("inf"))
        self.assertGreater(c["connect_time_us"], 0)
        for k in ("single_stream_gbit_s", "multi_stream_gbit_s"):
            self.assertGreater(c[k], 0)
            self.assertLess(c[k], 400)
        self.assertTrue(c["mtu_match"])
        by_pair = {(l["a"]["ifname"], l["b"]["ifname"]): l for l in p["links"]}
        # fab0 and slow0 each side; dead0 (a subnet of its own) is an address the controller cannot
        # vouch for and the peer is not on: it is refused by name, never contacted.
        self.assertEqual({(a, b) for a in ("fab0", "slow0") for b in ("fab0", "slow0")}, set(by_pair))
        refused = {f["subject"] for f in findings(doc, "pair.peer_address_refused")}
        self.assertEqual({"%s:dead0 %s" % (w, a) for w, a in ((self.world.hosts[0], self.world.dead_addr(0)),
                                                               (self.world.hosts[1], self.world.dead_addr(1)))},
                         refused)
        slow = by_pair[("slow0", "slow0")]
        self.assertEqual("open", slow["status"])
        # tbf at 20 Mbit/s: the decoy is reachable but measured far slower than fab0.
        self.assertLess(slow["single_stream_gbit_s"], 0.04)
        self.assertLess(slow["single_stream_gbit_s"], c["single_stream_gbit_s"] / 5)
        # The crossed pairs are unusable. Which name they get depends on the kernel: a socket pinned
        # to an interface treats any destination as on-link, so the peer may answer ARP on the
        # other interface and RST the SYN ("closed"), or nobody answers ("blocked"/"unreachable").
        for key, l in by_pair.items():
            if key not in (("fab0", "fab0"), ("slow0", "slow0")):
                self.assertIn(l["status"], ("unreachable", "closed", "blocked"), (key, l))
                self.assertIsNone(l["rtt_histogram"])
        self.assertTrue(findings(doc, "pair.link_slower"))
        self.assertTrue(findings(doc, "pair.link_unreachable"))
        self.assertEqual("open", p["rendezvous"]["status"])
        self.assertEqual(29400, p["rendezvous"]["port"])
        # The all-reduce runners the agents' build has: every CPU socket transport runs and is
        # correct; RDMA and NCCL ones are "unavailable" with a reason where this machine has no
        # HCA / GPU, and where it has one they run or say why they did not (machine.py), never
        # silently skipped. One that ran is checked like the CPU ones.
        runs = {t["transport"]: t for t in p["transports"]}
        self.assertEqual(set(p["agents"]["a"]["transports"]), set(runs))
        for name, t in runs.items():
            allowed, why = machine.expected_statuses(name)
            self.assertIn(t["status"], allowed, "%s (%s): %s" % (name, why, t))
            if t["status"] != "ok":
                self.assertTrue(t["reason"], t)
                continue
            self.assertTrue(t["all_correct"], t)
            self.assertEqual([4096, 1 << 20], [s["bytes"] for s in t["sizes"]])
            self.assertGreater(t["peak_busbw_gbps"], 0)
            self.assertLess(t["peak_busbw_gbps"], 50)  # GB/s: far above any veth on 2 cores
            # link_fraction = busbw * 8 / link rate, when the link speed is known
            rate = c["link_rate_gbit_s"]
            if rate:
                self.assertAlmostEqual(t["link_fraction"], t["peak_busbw_gbps"] * 8 / rate, places=6)
            else:
                self.assertIsNone(t["link_fraction"])
        if runs:
            self.assertIn(p["recommended"]["transport"], [n for n, t in runs.items() if t["status"] == "ok"])
            self.assertNotEqual("raw-exchange", p["recommended"]["transport"])
        self.assertLess(elapsed, 60)
        # No agent left behind in either namespace.
        time.sleep(0.2)
        self.assertEqual([], self.world.pids(0) + self.world.pids(1))

    def test_blocked_rendezvous_port_is_named_within_the_timeout(self):
        w = self.world
        w.run(0, "nft", "add table inet fk; add chain inet fk in { type filter hook input priority 0; }; "
                        "add rule inet fk in tcp dport 29400 drop")
        rc, doc, elapsed = self.pair("--transports", "none")
        self.assertEqual(1, rc)
        f = findings(doc, "pair.port_blocked")
        self.assertEqual(1, len(f), doc["findings"])
        self.assertIn(w.addr(0) + ":29400", f[0]["subject"])
        self.assertEqual("blocked", doc["pair"]["rendezvous"]["status"])
        self.assertLessEqual(doc["pair"]["rendezvous"]["timeout_ms"], TIMEOUT_MS)
        self.assertLess(elapsed, 30)

    def test_rejecting_port_is_closed(self):
        w = self.world
        w.run(0, "nft", "add table inet fk; add chain inet fk in { type filter hook input priority 0; }; "
                        "add rule inet fk in tcp dport 29411 reject with tcp reset")
        rc, doc, elapsed = self.pair("--port", "29411", "--transports", "none")
        self.assertEqual(1, rc)
        self.assertEqual(1, len(findings(doc, "pair.port_closed")), doc["findings"])
        self.assertEqual("closed", doc["pair"]["rendezvous"]["status"])
        self.assertLess(elapsed, 30)

    def test_killed_agent_is_named_with_its_step(self):
        w = self.world
        p, t0 = self.pair("--bandwidth-ms", "2000", wait=False)
        deadline = time.monotonic() + 20
        victim = None
        while time.monotonic() < deadline and victim is None:
            pids = w.pids(1)
            if pids:
                time.sleep(1.0)  # into the measurements
                victim = w.pids(1)
            time.sleep(0.05)
        self.assertTrue(victim, "agent on host 1 never appeared")
        t_kill = time.monotonic()
        for pid in victim:
            os.kill(pid, 9)
        rc, doc, _ = self.finish(p, t0)
        after_kill = time.monotonic() - t_kill
        self.assertEqual(1, rc)
        lost = findings(doc, "pair.agent_lost")
        self.assertEqual(1, len(lost), doc["findings"])
        self.assertEqual(w.hosts[1], lost[0]["subject"])
        self.assertIn("step '", lost[0]["message"])
        self.assertLess(after_kill, TIMEOUT_MS / 1000 + 5)
        time.sleep(0.2)
        self.assertEqual([], w.pids(0))  # the surviving agent was stopped too

    def test_sigint_on_the_controller_stops_both_agents(self):
        w = self.world
        p, t0 = self.pair("--bandwidth-ms", "2000", wait=False)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (w.pids(0) and w.pids(1)):
            time.sleep(0.05)
        self.assertTrue(w.pids(0) and w.pids(1), "agents never appeared")
        time.sleep(0.5)
        p.send_signal(2)  # `ip netns exec` execs fabcheck: this is the controller itself
        p.communicate(timeout=30)
        self.assertEqual(-2, p.returncode)  # re-raised with the default action
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and (w.pids(0) or w.pids(1)):
            time.sleep(0.05)
        self.assertEqual([], w.pids(0) + w.pids(1))

    def test_failed_launch_is_named_within_the_timeout(self):
        w = self.world
        rc, doc, elapsed = self.pair(hosts=[w.hosts[0], w.tag + "-nope"])
        self.assertEqual(1, rc)
        f = findings(doc, "pair.launch_failed")
        self.assertEqual(1, len(f), doc["findings"])
        self.assertEqual(w.tag + "-nope", f[0]["subject"])
        self.assertIn("'hello'", f[0]["message"])
        self.assertIn("Cannot open network namespace", f[0]["message"])  # the launcher's stderr
        self.assertLess(elapsed, TIMEOUT_MS / 1000 + 5)
        time.sleep(0.2)
        self.assertEqual([], w.pids(0))

    def test_agent_refuses_wrong_token_and_bad_frames_by_name(self):
        w = self.world
        token = secrets.token_hex(32)
        agent = subprocess.Popen(["ip", "netns", "exec", w.hosts[0], FABCHECK, "agent", "--bind", w.addr(0),
                                  "--accept-timeout-ms", "20000"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(agent.kill)
        agent.stdin.write(token + "\n")
        agent.stdin.flush()
        hello = json.loads(agent.stdout.readline())
        self.assertEqual(w.addr(0), hello["bind_addr"])
        with open("/proc/%d/cmdline" % agent.pid) as f:
            self.assertNotIn(token, f.read())

        def client(mode, tok):
            r = subprocess.run(["ip", "netns", "exec", w.ctl, sys.executable, os.path.join(HERE, "wire_client.py"),
                                w.addr(0), str(hello["port"]), mode], input=tok + "\n",
                               capture_output=True, text=True, timeout=30)
            return json.loads(r.stdout)

        wrong = client("hello", "f" * 64)
        self.assertEqual(4, wrong.get("frame_type"), wrong)  # error frame
        self.assertEqual("wire.bad_token", wrong["body"]["code"])
        self.assertTrue(wrong["closed_after"])
        self.assertLess(wrong["elapsed_s"], 2)
        # All it got: the agent's hello (protocol, role, a nonce) and that error, nothing derived
        # from the token to test guesses against.
        self.assertEqual({"protocol", "role", "nonce"}, set(wrong["server_hello"]), wrong)
        self.assertNotIn("server_proof_ok", wrong)
        received = bytes.fromhex(wrong["received_hex"]).decode("latin-1")
        rest = received.replace(wrong["server_hello"]["nonce"], "")
        self.assertIsNone(re.search("[0-9a-fA-F]{16}", rest), rest)
        over = client("oversized", token)
        self.assertEqual("wire.oversized", over["body"]["code"], over)
        garbage = client("garbage", token)
        self.assertEqual("wire.bad_type", garbage["body"]["code"], garbage)
        # The agent is still waiting for its real controller, and accepts the right token.
        right = client("hello", token)
        self.assertTrue(right.get("server_proof_ok"), right)
        self.assertEqual(6, right.get("frame_type"), right)  # the welcome
        self.assertIn("version", right["body"]["info"])
        agent.wait(timeout=10)  # that client left without bye: the agent exits
        self.assertEqual(1, agent.returncode)
        self.assertIn("rejected a connection: wire.bad_token: wrong session token", agent.stderr.read())


if __name__ == "__main__":
    FABCHECK = os.path.abspath(sys.argv.pop(1))
    ok, why = netns.have_root_and_netns()
    if not ok:
        print("SKIP: " + why)
        sys.exit(77)
    unittest.main(verbosity=2)
