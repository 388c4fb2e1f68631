"""A minimal client of the agent's control protocol (docs/pair.md "Wire protocol"), written from
the documentation alone, so the integration tests check the documented frames and handshake and
not just our own C++ against itself. Run inside a namespace:

    wire_client.py ADDR PORT MODE        (token on stdin; prints one JSON line with what happened)
MODE: hello (the handshake with the given token: the client proves first, then checks the proof
in the agent's welcome and reports whether it held; a client that does not know the token gets an
error frame instead, and every byte the agent sent is reported in "received_hex"),
oversized (a header announcing 2 GiB), garbage (5 bytes of an unknown frame type).
"""
import hashlib
import hmac
import json
import os
import socket
import struct
import sys
import time

LABEL = b"fabkit session handshake v3"
PROTOCOL = 4
HELLO, AUTH, ERROR = 1, 6, 4
SCRYPT_SALT = b"fabkit session token key v1"


def session_key(token):
    """A generated token (64 lowercase hex digits) is its own key; any other is a passphrase,
    stretched with scrypt (N=2^16, r=8, p=1)."""
    if len(token) == 64 and all(c in "0123456789abcdef" for c in token):
        return bytes.fromhex(token)
    return hashlib.scrypt(token.encode(), salt=SCRYPT_SALT, n=1 << 16, r=8, p=1, maxmem=80 << 20, dklen=32)


def read_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError("closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


RECEIVED = bytearray()  # every byte the agent sent, for the test to inspect


def read_frame(s):
    header = read_exact(s, 5)
    length, ftype = struct.unpack(">IB", header)
    payload = read_exact(s, length)
    RECEIVED.extend(header + payload)
    return ftype, json.loads(payload or b"{}")


def send_frame(s, ftype, body):
    payload = json.dumps(body).encode()
    s.sendall(struct.pack(">IB", len(payload), ftype) + payload)


def proof(token, direction, client_role, server_role, purpose, client_nonce, server_nonce):
    msg = b""
    for field in (LABEL, direction.encode(), client_role.encode(), server_role.encode(), purpose.encode(),
                  client_nonce, server_nonce):
        msg += struct.pack(">I", len(field)) + field
    return hmac.new(session_key(token), msg, hashlib.sha256).digest()


def handshake(s, token, out):
    nonce = os.urandom(32)
    send_frame(s, HELLO, {"protocol": PROTOCOL, "role": "controller", "purpose": "control", "nonce": nonce.hex()})
    ftype, body = read_frame(s)
    if ftype != HELLO:
        return ftype, body
    out["server_hello"] = body
    server_nonce = bytes.fromhex(body["nonce"])
    mine = proof(token, "client", "controller", body["role"], "control", nonce, server_nonce)
    send_frame(s, AUTH, {"proof": mine.hex(), "info": {}})
    ftype, body = read_frame(s)
    if ftype == AUTH:  # the welcome: the agent proves the token in turn
        want = proof(token, "server", "controller", out["server_hello"]["role"], "control", nonce, server_nonce)
        out["server_proof_ok"] = hmac.compare_digest(want, bytes.fromhex(body.get("proof", "")))
    return ftype, body


def main():
    addr, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    token = sys.stdin.readline().strip()
    t0 = time.monotonic()
    out = {"mode": mode}
    try:
        s = socket.create_connection((addr, port), timeout=10)
        s.settimeout(10)
        if mode == "hello":
            ftype, body = handshake(s, token, out)
        else:
            if mode == "oversized":
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
    out["received_hex"] = RECEIVED.hex()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
