"""A compromised node's agent (Python 3 stdlib only, the protocol from docs/pair.md via
wire_client.py): it holds the session token and speaks the protocol correctly, but lies about
itself. Its facts report, beside its real interface, an interface "evil0" holding VICTIM_ADDR (a
host outside the session), and it answers the test-server request for that address with
VICTIM_PORT, so a controller that trusts agents' claims has the peer agent connect to the victim.

    hostile_agent.py OWN_ADDR VICTIM_ADDR VICTIM_PORT   (token on stdin; launched like an agent)

Prints the hello line, serves one controller, exits on bye or when the controller leaves. As a
--launcher wrapper it stands in for one host's agent and launches every other host unchanged:

    --launcher 'python3 hostile_agent.py launch HOSTILE_NS OWN VICTIM VPORT {host} ip netns exec {host}'
"""
import json
import os
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import wire_client  # noqa: E402

REQUEST, RESPONSE, BYE = 2, 3, 5


def interface(name, addr):
    return {"name": name, "up": True, "running": True, "mtu": 1500, "speed_mbps": None, "kind": "other",
            "addresses": [{"family": "ipv4", "address": addr, "prefix_len": 24}]}


def serve_handshake_v3(conn, token, hello):
    """The handshake of protocol 3 (the server proved first, keyed by the token's bytes), so the
    same attack can be run against a controller built before the fix (HOSTILE_PROTOCOL=3)."""
    import hashlib
    import hmac
    import struct

    def proof3(direction, client_nonce, server_nonce):
        msg = b""
        for field in (b"fabkit session handshake v2", direction.encode(), hello["role"].encode(), b"agent",
                      hello["purpose"].encode(), client_nonce, server_nonce):
            msg += struct.pack(">I", len(field)) + field
        return hmac.new(token.encode(), msg, hashlib.sha256).digest()

    nonce, client_nonce = os.urandom(32), bytes.fromhex(hello["nonce"])
    wire_client.send_frame(conn, wire_client.HELLO, {"protocol": 3, "role": "agent", "nonce": nonce.hex(),
                                                     "proof": proof3("server", client_nonce, nonce).hex()})
    ftype, auth = wire_client.read_frame(conn)
    if bytes.fromhex(auth["proof"]) != proof3("client", client_nonce, nonce):
        raise SystemExit("the controller's proof did not verify")
    wire_client.send_frame(conn, wire_client.AUTH, {"info": {"name": "hostile"}})


def serve_handshake(conn, token):
    ftype, hello = wire_client.read_frame(conn)
    if hello.get("protocol") == 3:
        return serve_handshake_v3(conn, token, hello)
    nonce = os.urandom(32)
    wire_client.send_frame(conn, wire_client.HELLO,
                           {"protocol": wire_client.PROTOCOL, "role": "agent", "nonce": nonce.hex()})
    ftype, auth = wire_client.read_frame(conn)
    client_nonce = bytes.fromhex(hello["nonce"])
    want = wire_client.proof(token, "client", hello["role"], "agent", hello["purpose"], client_nonce, nonce)
    if bytes.fromhex(auth["proof"]) != want:
        raise SystemExit("the controller's proof did not verify")
    mine = wire_client.proof(token, "server", hello["role"], "agent", hello["purpose"], client_nonce, nonce)
    wire_client.send_frame(conn, wire_client.AUTH, {"proof": mine.hex(), "info": {"name": "hostile"}})


def answer(op, args, own, victim, victim_port):
    if op == "facts":
        return {"report": {}, "transports": [],
                "interfaces": {"source": "getifaddrs",
                               "interfaces": [interface("fab0", own), interface("evil0", victim)]}}
    if op == "set_peers":
        return {"peers": len(args.get("addresses", []))}
    if op == "tcp_serve":  # the victim's port for the claimed address; a closed one for our own
        return {"server_id": 1 if args.get("addr") == victim else 2,
                "port": victim_port if args.get("addr") == victim else 9}
    if op == "tcp_stop":
        return {"rejected_connections": 0}
    if op == "port_listen":
        return {"status": "listening", "error": None}
    if op == "port_close":
        return {"accepted": 0}
    if op == "free_port":
        return {"port": victim_port}
    return None


def launch(argv):
    hostile_ns, own, victim, vport, host = argv[:5]
    command = argv[5:]
    if host != hostile_ns:
        os.execvp(command[0], command)
    os.execvp("ip", ["ip", "netns", "exec", hostile_ns, sys.executable, os.path.abspath(__file__), own, victim, vport])


def main():
    if sys.argv[1] == "launch":
        return launch(sys.argv[2:])
    own, victim, victim_port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    token = sys.stdin.readline().strip()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((own, 0))
    listener.listen(8)
    listener.settimeout(30)
    print(json.dumps({"fabkit_agent": int(os.environ.get("HOSTILE_PROTOCOL", wire_client.PROTOCOL)),
                      # The controller refuses another release (pair.version_mismatch): the
                      # tests give the real one unless they test that refusal.
                      "version": os.environ.get("HOSTILE_VERSION", "hostile"), "name": "hostile",
                      "hostname": "hostile", "pid": os.getpid(), "bind_addr": own,
                      "port": listener.getsockname()[1], "addresses": [own]}), flush=True)
    conn, _ = listener.accept()
    conn.settimeout(60)
    serve_handshake(conn, token)
    while True:
        try:
            ftype, req = wire_client.read_frame(conn)
        except (EOFError, OSError):
            return
        if ftype == BYE:
            return
        result = answer(req.get("op"), req.get("args", {}), own, victim, victim_port)
        body = {"id": req["id"], "ok": result is not None}
        if result is None:
            body["error"] = {"code": "agent.internal", "message": "not played by the hostile agent"}
        else:
            body["result"] = result
        wire_client.send_frame(conn, RESPONSE, body)


if __name__ == "__main__":
    main()
