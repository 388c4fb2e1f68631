"""A compromised agent for `fabcheck pair --launcher`: runs the real agent behind a relay that
passes every frame through (the session handshake included, so it proves the real token) but
replaces the agent's answer to one request with a hostile one.

    --launcher '/usr/bin/python3 tampering_agent.py MODE TAMPERED_HOST {host}'
    (the controller appends the agent command: fabcheck agent --name HOST ...)

MODE: facts-nested   the facts answer carries a report nested 100000 levels deep (~200 KB,
                     inside the 16 MiB frame cap)
      facts-typed    the facts answer's "interfaces" is a string, not an object
Only the agent started for TAMPERED_HOST tampers; the other one relays unchanged.
"""
import json
import os
import socket
import struct
import subprocess
import sys
import threading

REQUEST, RESPONSE = 2, 3


def read_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_frame(s):
    head = read_exact(s, 5)
    if head is None:
        return None
    (length,) = struct.unpack(">I", head[:4])
    body = read_exact(s, length)
    return None if body is None else (head[4], body)


def write_frame(s, ftype, body):
    s.sendall(struct.pack(">IB", len(body), ftype) + body)


def hostile_facts(mode, request_id, honest):
    if mode == "facts-nested":
        depth = 100000
        return (b'{"id":%d,"ok":true,"result":{"report":{"deep":' % request_id + b"[" * depth +
                b"]" * depth + b'},"interfaces":{"source":"net","interfaces":[]},"transports":[]}}')
    if mode == "facts-typed":
        doc = json.loads(honest)
        doc["result"]["interfaces"] = "eth0"
        return json.dumps(doc).encode()
    raise SystemExit("unknown mode " + mode)


def relay(src, dst, on_frame):
    try:
        while True:
            f = read_frame(src)
            if f is None:
                break
            ftype, body = on_frame(*f)
            write_frame(dst, ftype, body)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    mode, tampered_host, host, agent_argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    tamper = host == tampered_host
    # The token arrives on our stdin: the real agent inherits it.
    agent = subprocess.Popen(agent_argv, stdout=subprocess.PIPE, text=True)
    hello = None
    for line in agent.stdout:
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "fabkit_agent" in doc:
            hello = doc
            break
    if hello is None:
        raise SystemExit("the agent said no hello")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    agent_port = hello["port"]
    hello.update({"port": listener.getsockname()[1], "bind_addr": "127.0.0.1"})
    print(json.dumps(hello), flush=True)
    controller, _ = listener.accept()
    upstream = socket.create_connection(("127.0.0.1", agent_port))
    facts_ids = set()

    def to_agent(ftype, body):
        if ftype == REQUEST:
            try:
                req = json.loads(body)
                if req.get("op") == "facts":
                    facts_ids.add(req.get("id"))
            except ValueError:
                pass
        return ftype, body

    def to_controller(ftype, body):
        if tamper and ftype == RESPONSE:
            try:
                rid = json.loads(body).get("id")
            except ValueError:
                rid = None
            if rid in facts_ids:
                return ftype, hostile_facts(mode, rid, body)
        return ftype, body

    t = threading.Thread(target=relay, args=(controller, upstream, to_agent), daemon=True)
    t.start()
    relay(upstream, controller, to_controller)
    t.join(timeout=5)
    try:
        agent.wait(timeout=10)
    except subprocess.TimeoutExpired:
        agent.kill()
    return agent.returncode or 0


if __name__ == "__main__":
    sys.exit(main())
