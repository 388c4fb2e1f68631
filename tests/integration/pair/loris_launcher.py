"""A --launcher wrapper that puts a slow-loris attacker (slow_loris.py) in front of one host's
agent control port before the controller can connect: it runs the real launcher command, reads
the agent's hello line (the port), has the attacker hold N connections to that port from another
namespace, and only then passes the hello on to the controller. Every other host is launched
unchanged.

    --launcher 'python3 loris_launcher.py N ATTACKER_NS VICTIM_NS VICTIM_ADDR STATUS_FILE {host}
                ip netns exec {host}'

The agent's stdin (the token) is inherited; its stdout after the hello is copied through. The
attacker's first status line ("held K of N") is written to STATUS_FILE before the hello goes on. The
attacker runs until the agent exits.
"""
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    n, attacker_ns, victim, victim_addr, status_file, host = sys.argv[1:7]
    n = int(n)
    command = sys.argv[7:]
    if host != victim:
        os.execvp(command[0], command)
    agent = subprocess.Popen(command, stdout=subprocess.PIPE)  # stdin and stderr inherited
    line = agent.stdout.readline()
    attacker = None
    try:
        hello = json.loads(line)
        attacker = subprocess.Popen(["ip", "netns", "exec", attacker_ns, sys.executable,
                                     os.path.join(HERE, "slow_loris.py"), victim_addr, str(hello["port"]), str(n)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        status = ""
        while time.monotonic() < deadline:
            status = attacker.stdout.readline()
            if not status or status.startswith("held"):
                break
        with open(status_file, "w") as f:
            f.write(status or "attacker ended\n")
        # Keep the attacker's status lines flowing so it never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in attacker.stdout], daemon=True).start()
    except ValueError:
        pass  # not a hello: pass it on, the controller reports it
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
    for chunk in iter(lambda: agent.stdout.read1(65536), b""):
        sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
    rc = agent.wait()
    if attacker is not None:
        attacker.stdin.close()
        try:
            attacker.wait(timeout=5)
        except subprocess.TimeoutExpired:
            attacker.kill()
    sys.exit(rc)


if __name__ == "__main__":
    main()
