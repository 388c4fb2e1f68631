"""A minimal client of the agent's control protocol (docs/pair.md "Wire protocol"), written from
the documentation alone, so the integration tests check the documented frames and not just our
own C++ against itself. Run inside a namespace:

    wire_client.py ADDR PORT MODE        (token on stdin; prints one JSON line with what happened)
MODE: hello (present the token), oversized (a header announcing 2 GiB), garbage (5 bytes of an
unknown frame type), silent (connect and send nothing).
"""
import json
import socket
import struct
import sys
import time


def read_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError("closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


def read_frame(s):
    header = read_exact(s, 5)
    length, ftype = struct.unpack(">IB", header)
    return ftype, json.loads(read_exact(s, length) or b"{}")


def main():
    addr, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    token = sys.stdin.readline().strip()
    t0 = time.monotonic()
    out = {"mode": mode}
    try:
        s = socket.create_connection((addr, port), timeout=10)
        s.settimeout(10)
        if mode == "hello":
            payload = json.dumps({"protocol": 1, "role": "controller", "token": token}).encode()
            s.sendall(struct.pack(">IB", len(payload), 1) + payload)
        elif mode == "oversized":
            s.sendall(struct.pack(">IB", 2 << 30, 1))
        elif mode == "garbage":
            s.sendall(struct.pack(">IB", 0, 9))
        ftype, body = read_frame(s)
        out.update({"frame_type": ftype, "body": body})
        try:  # after an error frame the agent closes the connection
            more = s.recv(1)
            out["closed_after"] = more == b""
        except socket.timeout:
            out["closed_after"] = False
    except Exception as e:  # reported, not raised: the test asserts on it
        out["exception"] = "%s: %s" % (type(e).__name__, e)
    out["elapsed_s"] = time.monotonic() - t0
    print(json.dumps(out))


if __name__ == "__main__":
    main()
