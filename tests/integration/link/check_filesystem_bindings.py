#!/usr/bin/env python3
"""Fails if any fabkit binary's std::filesystem references resolve into a torch library.

The torch wheels export the copy of libstdc++'s std::filesystem they link statically
(pytorch#133437). A binary whose NEEDED list has libtorch ahead of libstdc++.so.6 binds its own
std::filesystem calls to that copy, which jumps to a null pointer. The dynamic loader is the
authority on bindings, so each binary is started with LD_BIND_NOW=1 (every symbol bound before
main) and LD_DEBUG=bindings, and the log is read: a `_ZNSt10filesystem` symbol referenced by the
binary and bound to a file under torch/lib is a failure. Every ELF executable under the build
directory that loads libtorch is checked; the canary (linked without the fix) must be flagged, or
the check itself is broken.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

BINDING = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `(_ZNSt10filesystem[^']*)'")


def is_elf_executable(path):
    if not os.path.isfile(path) or not os.access(path, os.X_OK) or path.endswith(".so"):
        return False
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def loads_torch(path):
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    return r.returncode == 0 and "libtorch" in r.stdout


def quick_args(path):
    """Arguments that make the binary exit at once (bindings happen before main either way)."""
    name = os.path.basename(path)
    if name == "filesystem_binding_canary":
        return ["--check-only"]
    with open(path, "rb") as f:
        if b"gtest_list_tests" in f.read():
            return ["--gtest_list_tests"]
    return ["--help"]


def bad_bindings(path):
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "ld")
        env = dict(os.environ, LD_BIND_NOW="1", LD_DEBUG="bindings", LD_DEBUG_OUTPUT=log)
        try:
            subprocess.run([path] + quick_args(path), env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        except subprocess.TimeoutExpired:
            pass  # the bindings were logged before main; the log is what counts
        text = ""
        for name in os.listdir(tmp):
            with open(os.path.join(tmp, name), errors="replace") as f:
                text += f.read()
    if "binding file" not in text:
        raise RuntimeError(f"{path}: the loader logged no bindings (LD_DEBUG unsupported?)")
    real = os.path.realpath(path)
    bad, good = [], 0
    for src, dst, sym in BINDING.findall(text):
        if os.path.realpath(src) != real:
            continue  # a library's own references are not fabkit's to fix
        if "/torch/lib/" in dst:
            bad.append(f"{sym} -> {dst}")
        else:
            good += 1
    return bad, good


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--canary", required=True)
    a = ap.parse_args()

    canary_bad, _ = bad_bindings(a.canary)
    if not canary_bad:
        print(f"FAIL: the canary {a.canary} was not flagged: the check cannot see the fault it exists for")
        return 1
    print(f"canary flagged as expected ({len(canary_bad)} bindings into torch, e.g. {canary_bad[0]})")

    checked, failures = 0, []
    canary = os.path.realpath(a.canary)
    for root, dirs, files in os.walk(a.build_dir):
        dirs[:] = [d for d in dirs if d not in ("CMakeFiles", "Testing")]
        for f in sorted(files):
            p = os.path.join(root, f)
            if os.path.realpath(p) == canary or not is_elf_executable(p) or not loads_torch(p):
                continue
            bad, good = bad_bindings(p)
            checked += 1
            status = "BAD" if bad else "ok"
            print(f"{status}: {os.path.relpath(p, a.build_dir)} ({good} std::filesystem bindings to libstdc++)")
            failures += [f"{p}: {b}" for b in bad]
    if checked == 0:
        print(f"FAIL: no binary under {a.build_dir} loads libtorch; nothing was checked")
        return 1
    if failures:
        print("std::filesystem references bound into a torch library (link libstdc++ first):")
        print("\n".join("  " + x for x in failures))
        return 1
    print(f"{checked} torch-linked binaries checked; none binds std::filesystem into torch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
