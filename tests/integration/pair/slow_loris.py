"""A slow-loris attacker for fabkit's listeners (Python 3 stdlib only): holds N TCP connections to
ADDR:PORT open without ever completing a handshake, and opens a new one whenever the listener
closes one, so N stay held for as long as it runs.

    slow_loris.py ADDR PORT N [--mode silent|trickle]

silent: connect and send nothing. trickle: send a valid-looking hello frame one byte per second on
every connection (progress, but never a complete frame). Prints "held K of N" on stdout once, when
all N connections are established or, against a listener that closes some at once, after 2 s
with as many as it holds then; then "closed_by_server M" lines every second when the listener has
closed some (and they were reopened). Runs until stdin closes or SIGTERM. Run it inside the
attacker's namespace: `ip netns exec NS python3 slow_loris.py ...`.
"""
import errno
import json
import os
import resource
import selectors
import signal
import socket
import struct
import sys
import time


def hello_bytes():
    body = json.dumps({"protocol": 4, "role": "controller", "purpose": "control", "nonce": "7" * 64}).encode()
    return struct.pack(">IB", len(body), 1) + body


class Loris:
    def __init__(self, addr, port, n, mode):
        self.addr, self.port, self.n, self.mode = addr, port, n, mode
        self.sel = selectors.DefaultSelector()
        self.conns = {}  # socket -> bytes of the hello sent so far
        self.connecting = set()
        self.closed_by_server = 0
        self.hello = hello_bytes()

    def open_one(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        err = s.connect_ex((self.addr, self.port))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            return False
        self.connecting.add(s)
        self.sel.register(s, selectors.EVENT_WRITE)
        return True

    def established(self):
        return len(self.conns)

    def fill(self):
        while len(self.conns) + len(self.connecting) < self.n:
            if not self.open_one():
                time.sleep(0.01)
                break

    def drop(self, s, by_server):
        try:
            self.sel.unregister(s)
        except (KeyError, ValueError):
            pass
        self.connecting.discard(s)
        self.conns.pop(s, None)
        s.close()
        if by_server:
            self.closed_by_server += 1

    def step(self, timeout):
        for key, ev in self.sel.select(timeout):
            s = key.fileobj
            if s in self.connecting:
                self.sel.unregister(s)
                self.connecting.discard(s)
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    s.close()
                    continue
                self.conns[s] = 0
                self.sel.register(s, selectors.EVENT_READ)
            else:  # readable: the listener sent an error frame or closed us
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    self.drop(s, by_server=True)

    def trickle(self):
        for s, sent in list(self.conns.items()):
            if sent + 1 >= len(self.hello):
                continue  # never the last byte: the frame stays incomplete
            try:
                s.send(self.hello[sent:sent + 1])
                self.conns[s] = sent + 1
            except OSError:
                self.drop(s, by_server=True)


def main():
    addr, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    mode = "silent"
    if "--mode" in sys.argv:
        mode = sys.argv[sys.argv.index("--mode") + 1]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, n + 64)), hard))
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    loris = Loris(addr, port, n, mode)
    stdin_open = True
    sel_in = selectors.DefaultSelector()
    sel_in.register(sys.stdin, selectors.EVENT_READ)
    announced = False
    started = last_tick = time.monotonic()
    reported = 0
    while stdin_open:
        loris.fill()
        loris.step(0.01)
        now = time.monotonic()
        if not announced and (loris.established() >= n or now - started >= 2.0):
            print("held %d of %d" % (loris.established(), n), flush=True)
            announced = True
        if now - last_tick >= 1.0:
            last_tick = now
            if mode == "trickle":
                loris.trickle()
            if loris.closed_by_server != reported:
                reported = loris.closed_by_server
                print("closed_by_server %d" % reported, flush=True)
        for key, _ in sel_in.select(0):
            if not os.read(sys.stdin.fileno(), 4096):
                stdin_open = False


if __name__ == "__main__":
    main()
