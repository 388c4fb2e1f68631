"""Slow-loris scenarios against `fabcheck pair` on namespace hosts, shared by test_pair_attacks.py
and by the measurement of how many held connections break each listener:

    slow_loris_scenarios.py FABCHECK control|tcp N [N ...]     (root; one JSON line per N)

control: loris_launcher.py has the attacker (host 2's namespace, on the bridge) hold N connections
  to host 1's agent control port before the controller connects; outcome "ok" when the controller
  connected and measured a link, else the failed step's finding code. "held": how many the
  listener let the attacker hold when the controller came (N, or fewer against a listener that
  closes the excess at once).
tcp: host 0 and host 1 get an extra direct link "aux0" whose pairs are measured first; meanwhile
  the attacker holds N connections to host 1's test server on fab0 (found in the agent's
  /proc/PID/net/tcp as soon as it listens); outcome "ok" when the fab0 -> fab0 link is then
  measured in full (open, every ping), else its status and error.
"""
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
import netns  # noqa: E402

LAUNCHER = "ip netns exec {host} env NCCL_HOSTID={host}"
FAST = {"--pings": "1000", "--bandwidth-ms": "300", "--streams": "4", "--sizes": "4K,1M", "--iters": "5",
        "--warmup-iters": "1", "--timeout-ms": "4000", "--transport-timeout-ms": "30000"}


def start_pair(fabcheck, w, launcher, hosts, *extra, defaults=True):
    opts = dict(FAST) if defaults else {}
    opts.update(dict(zip(extra[::2], extra[1::2])))
    argv = ["ip", "netns", "exec", w.ctl, fabcheck, "pair", *hosts, "--launcher", launcher, "--json"]
    for k, v in opts.items():
        argv += [k, v]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), time.monotonic()


def finish(p, t0, timeout=180):
    out, err = p.communicate(timeout=timeout)
    try:
        doc = json.loads(out)
    except ValueError:
        raise AssertionError("not JSON (exit %d): %s\nstderr: %s" % (p.returncode, out[:2000], err[-2000:]))
    return p.returncode, doc, time.monotonic() - t0


def run_pair(fabcheck, w, launcher, hosts, *extra):
    p, t0 = start_pair(fabcheck, w, launcher, hosts, *extra)
    return finish(p, t0)


def failed_code(doc):
    for s in doc["pair"]["steps"]:
        if s["status"] == "failed":
            return "%s (step %s on %s: %s)" % (s["code"], s["step"], s["host"], s["error"][:300])
    return None


# -- /proc/PID/net/tcp: the sockets of the namespace PID lives in, read without a subprocess ----
def sockets(pid):
    """[(local_addr, local_port, remote_addr, remote_port, state)] of pid's network namespace."""
    out = []
    try:
        with open("/proc/%d/net/tcp" % pid) as f:
            next(f)
            for line in f:
                parts = line.split()
                (la, lp), (ra, rp) = (x.split(":") for x in parts[1:3])
                addr = lambda h: socket.inet_ntoa(struct.pack("<I", int(h, 16)))
                out.append((addr(la), int(lp, 16), addr(ra), int(rp, 16), parts[3]))
    except (OSError, StopIteration):
        pass
    return out


LISTEN, ESTABLISHED = "0A", "01"


def held_count(status_line):
    """K from slow_loris.py's "held K of N" line; 0 for anything else."""
    parts = status_line.split()
    return int(parts[1]) if len(parts) == 4 and parts[0] == "held" else 0


def agent_pid(w, host, deadline):
    while time.monotonic() < deadline:
        pids = w.pids(host)
        if pids:
            return pids[0]
        time.sleep(0.01)
    return None


def control_port(fabcheck, n):
    """The attacker holds n connections to host 1's control port before the controller connects."""
    with netns.NetnsWorld(hosts=3, decoys=True, controller=True) as w:
        status = os.path.join("/tmp", "%s-loris-status" % w.tag)
        launcher = "%s %s %d %s %s %s %s {host} %s" % (sys.executable, os.path.join(HERE, "loris_launcher.py"), n,
                                                      w.hosts[2], w.hosts[1], w.addr(1), status, LAUNCHER)
        try:
            rc, doc, elapsed = run_pair(fabcheck, w, launcher, w.hosts[:2], "--transports", "none")
            held = 0
            if os.path.exists(status):
                with open(status) as f:
                    held = held_count(f.read())
        finally:
            if os.path.exists(status):
                os.unlink(status)
        chosen = [l for l in doc["pair"]["links"] if l["chosen"]]
        outcome = "ok" if not failed_code(doc) and chosen else failed_code(doc) or "no link chosen"
        return {"listener": "control", "held": held, "n": n, "outcome": outcome, "elapsed_s": round(elapsed, 1)}


def test_server(fabcheck, n):
    """The attacker holds n connections to host 1's fab0 test server while earlier pairs run."""
    with netns.NetnsWorld(hosts=3, decoys=True, controller=True) as w:
        a, b = w.hosts[0], w.hosts[1]
        # aux0 sorts before every other interface: its pairs are measured first, which leaves the
        # attacker a second or more to fill fab0's test server before its turn.
        w.sh("ip", "-n", a, "link", "add", "aux0", "type", "veth", "peer", "name", "auxp")
        w.sh("ip", "-n", a, "link", "set", "auxp", "netns", b)
        w.sh("ip", "-n", b, "link", "set", "auxp", "name", "aux0")
        for ns, addr in ((a, "198.18.20.10"), (b, "198.18.20.11")):
            w.sh("ip", "-n", ns, "addr", "add", addr + "/24", "dev", "aux0")
            w.sh("ip", "-n", ns, "link", "set", "aux0", "up")
        p, t0 = start_pair(fabcheck, w, LAUNCHER, [a, b], "--transports", "none", "--bandwidth-ms", "1000")
        found = {}

        def attack():
            deadline = time.monotonic() + 30
            pid = agent_pid(w, 1, deadline)
            while pid and time.monotonic() < deadline:
                # The control port listens on every address; a test server on fab0's alone.
                ports = [s[1] for s in sockets(pid) if s[4] == LISTEN and s[0] == w.addr(1) and s[1] != 29400]
                if ports:
                    found["port"] = ports[0]
                    break
                time.sleep(0.0005)
            if "port" not in found:
                return
            found["attacker"] = subprocess.Popen(
                ["ip", "netns", "exec", w.hosts[2], sys.executable, os.path.join(HERE, "slow_loris.py"), w.addr(1),
                 str(found["port"]), str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            found["held"] = held_count(found["attacker"].stdout.readline())
            found["held_at_s"] = round(time.monotonic() - t0, 2)

        t = threading.Thread(target=attack)
        t.start()
        try:
            rc, doc, elapsed = finish(p, t0)
        finally:
            t.join()
            if "attacker" in found:
                found["attacker"].stdin.close()
                found["attacker"].kill()
                found["attacker"].wait()
                found["attacker"].stdout.close()
        by_pair = {(l["a"]["ifname"], l["b"]["ifname"]): l for l in doc["pair"]["links"]}
        link = by_pair.get(("fab0", "fab0"))
        if link and link["status"] == "open" and link["pings"] == int(FAST["--pings"]):
            outcome = "ok"
        else:
            outcome = "fab0->fab0 %s: %s" % (link["status"], link["error"][:300]) if link else "fab0->fab0 not measured"
        return {"listener": "tcp_test_server", "held": found.get("held", 0), "held_at_s": found.get("held_at_s"),
                "n": n, "outcome": outcome, "no_reachable_link": bool(
                    [f for f in doc["findings"] if f["code"] == "pair.no_reachable_link"]),
                "elapsed_s": round(elapsed, 1)}


def stop_when_allreduce_runs(w, host, timeout_s, min_age_s=1.0):
    """SIGSTOPs every process of host's namespace once its agent has held an all-reduce connection
    to host 0 open for min_age_s (an established connection it opened: not to a port it listens
    on, not to the rendezvous port 29400). The age tells the all-reduce's long-lived connection
    from the TCP tests' (each lives --bandwidth-ms; keep that well under min_age_s): on a loaded
    machine a stop timed from the first connection seen landed in the TCP tests instead. Returns
    the pids stopped, or [] at the timeout."""
    deadline = time.monotonic() + timeout_s
    pid = agent_pid(w, host, deadline)
    first_seen = {}
    while pid and time.monotonic() < deadline:
        socks = sockets(pid)
        listening = {s[1] for s in socks if s[4] == LISTEN}
        now = time.monotonic()
        open_now = {(s[1], s[3]) for s in socks
                    if s[4] == ESTABLISHED and s[2] == w.addr(0) and s[3] != 29400 and s[1] not in listening}
        first_seen = {c: first_seen.get(c, now) for c in open_now}
        if any(now - t >= min_age_s for t in first_seen.values()):
            pids = w.pids(host)
            for p in pids:
                os.kill(p, signal.SIGSTOP)
            return pids
        time.sleep(0.01)
    return []


def main():
    fabcheck, which = os.path.abspath(sys.argv[1]), sys.argv[2]
    for n in (int(x) for x in sys.argv[3:]):
        result = control_port(fabcheck, n) if which == "control" else test_server(fabcheck, n)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
