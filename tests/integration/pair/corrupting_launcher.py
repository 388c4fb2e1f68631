"""A launcher that damages what passes through it: `corrupting_launcher.py OFFSET COMMAND...` runs
COMMAND with our stdin copied to its stdin, the byte at OFFSET inverted. Stands for a transfer
damaged on the way (fabcheck pair --ship over ssh or a template: the binary travels on stdin).
"""
import os
import subprocess
import sys


def main():
    offset = int(sys.argv[1])
    child = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE)
    pos = 0
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        if pos <= offset < pos + len(chunk):
            b = bytearray(chunk)
            b[offset - pos] ^= 0xFF
            chunk = bytes(b)
        pos += len(chunk)
        try:
            child.stdin.write(chunk)
            child.stdin.flush()
        except BrokenPipeError:
            break
    try:
        child.stdin.close()
    except BrokenPipeError:
        pass
    sys.exit(child.wait())


if __name__ == "__main__":
    main()
