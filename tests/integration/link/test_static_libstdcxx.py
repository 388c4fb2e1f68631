#!/usr/bin/env python3
"""A toolchain whose own library folder has only libstdc++.a must still bind std::filesystem to
the shared libstdc++, not to the copy libtorch exports.

On the GPU machine (GCC 13 in /opt/gcc, torch 2.11) fabkit's `-lstdc++`-first link picked the
static archive, the binaries' std::filesystem references resolved into libtorch.so, and the first
create_directories crashed. A compiler wrapper that puts a folder holding only libstdc++.a first
on the library path reproduces that link here; a second wrapper also answers
`-print-file-name=libstdc++.so*` with the bare name, as a compiler that has no shared libstdc++
does. For each, the probe linked the old way must be flagged (the wrapper reproduces the fault)
and the probe linked through cmake/stdcxx_first.cmake must bind nothing into torch, put
libstdc++.so.6 first in NEEDED, and run.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_filesystem_bindings import bad_bindings  # noqa: E402

WRAPPER = """#!/bin/sh
{intercept}exec {cxx} -L{static_dir} "$@"
"""
NO_SHARED = """for a in "$@"; do
  case "$a" in -print-file-name=libstdc++.so*) echo "${a#-print-file-name=}"; exit 0;; esac
done
"""


def needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return [l.split("[", 1)[1].rstrip("]") for l in out.splitlines() if "(NEEDED)" in l]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--torch-lib", required=True)
    ap.add_argument("--python-site", default="")
    ap.add_argument("--cxx", required=True)
    a = ap.parse_args()
    archive = subprocess.run([a.cxx, "-print-file-name=libstdc++.a"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(archive) or not os.path.exists(archive):
        print(f"SKIP: {a.cxx} has no libstdc++.a to stand for a static-only toolchain ({archive!r})")
        return 0
    rpath_link = sorted(glob.glob(os.path.join(a.python_site, "nvidia", "*", "lib"))) if a.python_site else []
    failures = []
    with tempfile.TemporaryDirectory(prefix="fabkit-stdcxx-") as tmp:
        static_dir = os.path.join(tmp, "static-only")
        os.makedirs(static_dir)
        os.symlink(archive, os.path.join(static_dir, "libstdc++.a"))
        for name, intercept in (("static-archive-only", ""), ("no-shared-libstdcxx-known", NO_SHARED)):
            wrapper = os.path.join(tmp, name + "-c++")
            with open(wrapper, "w") as f:
                f.write(WRAPPER.format(intercept=intercept, cxx=a.cxx, static_dir=static_dir))
            os.chmod(wrapper, 0o755)
            build = os.path.join(tmp, "build-" + name)
            gen = ["-G", "Ninja"] if shutil.which("ninja") else []
            cfg = subprocess.run(["cmake", "-S", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                             "static_libstdcxx_project"), "-B", build, *gen,
                                  f"-DCMAKE_CXX_COMPILER={wrapper}", f"-DFABKIT_SOURCE_DIR={a.source_dir}",
                                  f"-DTORCH_LIB_DIR={a.torch_lib}", "-DRPATH_LINK_DIRS=" + ";".join(rpath_link)],
                                 capture_output=True, text=True)
            b = cfg if cfg.returncode else subprocess.run(["cmake", "--build", build], capture_output=True, text=True)
            if b.returncode:
                failures.append(f"{name}: the probe did not build:\n{(b.stdout + b.stderr)[-3000:]}")
                continue
            chosen = [l for l in cfg.stdout.splitlines() if "std::filesystem binds to" in l]
            print(f"{name}: {chosen[0].strip() if chosen else 'no shared libstdc++ chosen'}")
            unfixed, fixed = os.path.join(build, "fs_probe_unfixed"), os.path.join(build, "fs_probe_fixed")
            old_bad, _ = bad_bindings(unfixed)
            if not old_bad:
                failures.append(f"{name}: the old link bound nothing into torch: the wrapper does not "
                                f"reproduce the fault (NEEDED {needed(unfixed)})")
            else:
                print(f"{name}: old link flagged as expected ({len(old_bad)}, e.g. {old_bad[0]})")
            new_bad, good = bad_bindings(fixed)
            if new_bad:
                failures.append(f"{name}: the fixed link binds into torch: {new_bad[:3]}")
            libs = needed(fixed)
            if not libs or libs[0] != "libstdc++.so.6":
                failures.append(f"{name}: libstdc++.so.6 is not first in NEEDED: {libs}")
            run = subprocess.run([fixed, os.path.join(tmp, "probe-" + name)], capture_output=True, text=True,
                                 timeout=120)
            if run.returncode != 0 or "ok" not in run.stdout:
                failures.append(f"{name}: the fixed probe exited {run.returncode}: {run.stdout}{run.stderr}")
            else:
                print(f"{name}: fixed link: {good} std::filesystem bindings to libstdc++, none into torch; ran")
    if failures:
        print("FAIL:\n" + "\n".join(failures))
        return 1
    print("both toolchains: std::filesystem binds to the shared libstdc++")
    return 0


if __name__ == "__main__":
    sys.exit(main())
