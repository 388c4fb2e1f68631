"""Writes the hostile-shape seeds of issue #19 into the fuzz corpora (run from anywhere; the
files are committed, this records how they were made):
  - JSON nested 100000 levels deep (~200 KB), in the shape each JSON-reading target takes;
    the handshake's frames are capped at 4 KiB, so its seed nests 2000 levels;
  - a topology with 5000 <pci> elements (~0.9 MB, under fuzz_topo_xml's 1 MiB input cap),
    which the quadratic line lookup took seconds per run to read.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "support"))
from wide_topology import wide_topology  # noqa: E402


def nested(depth):
    return b"[" * depth + b"]" * depth


def frame(ftype, payload):
    return struct.pack(">IB", len(payload), ftype) + payload


def write(target, name, data):
    with open(os.path.join(HERE, target, name), "wb") as f:
        f.write(data)


def main():
    deep = nested(100000)
    write("profile_reader", "hostile-deep-nesting.json",
          b'{"schema_version": 1, "kind": "fabkit-profile", "provenance": {"x": ' + deep + b"}}")
    write("fuzz_rdma", "hostile-deep-nesting.json", b'{"lid": 12, "qpn": ' + deep + b"}")
    write("tokenizer_json_fuzz", "hostile-deep-nesting.json",
          b'{"model": {"type": "BPE", "vocab": ' + deep + b"}}")
    header = b'{"a": ' + deep + b"}"
    write("safetensors_header_fuzz", "hostile-deep-nesting", struct.pack("<Q", len(header)) + header)
    # A response frame (type 3) carrying a nested result, as a compromised agent would send it.
    write("wire_fuzz", "hostile_response_deep_nesting",
          frame(3, b'{"id": 1, "ok": true, "result": {"report": ' + deep + b"}}"))
    # Mode byte 0 (drive a server), then a hello frame (type 1) nested inside its 4 KiB cap.
    write("handshake_fuzz", "hostile_hello_deep_nesting",
          b"\x00" + frame(1, b'{"protocol": 2, "role": ' + nested(2000) + b"}"))
    write("fuzz_topo_xml", "hostile_5000_pci.xml", wide_topology(5000).encode())


if __name__ == "__main__":
    main()
