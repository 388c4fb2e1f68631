"""The Debian packages a GPU machine lacks: fetched here, unpacked there.

The GPU machines fabkit is checked on have CUDA, a driver, python3 with torch, g++ and CMake, but
not fabkit's other build dependencies, and no internet. Debian 12's packages of those (listed in
scripts/gpu-check-debs.txt) are downloaded on a machine with apt (`download`) and carried over
(the device tool's `carry`, scp, a shared filesystem); `install` unpacks them there.

Why not `dpkg -i` or `dpkg -x DEB /`: the target is another distribution (Ubuntu 24.04), where
dpkg would refuse the Debian dependencies, and on a merged-/usr system `/lib` is a symlink to
`usr/lib` that `dpkg -x` into / replaces with a directory, which breaks the machine. So each
package is unpacked into a staging directory, its top-level directories that are symlinks on the
target (lib, lib64, bin, sbin) are folded under usr/, and files are copied in without ever
replacing anything the target already has (its own newer libraries win).
"""
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "..", "gpu-check-debs.txt")


def package_names(path=LIST):
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def download(dest):
    """apt-get download every listed package into dest (no install, no root needed for apt's
    cache); returns the .deb paths. Raises RuntimeError naming apt's complaint."""
    os.makedirs(dest, exist_ok=True)
    names = package_names()
    r = subprocess.run(["apt-get", "download", *names], cwd=dest, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("apt-get download failed (%s): %s" % (" ".join(names), r.stderr.strip()[-800:]))
    return sorted(os.path.join(dest, n) for n in os.listdir(dest) if n.endswith(".deb"))


def _fold_symlinked_tops(stage, root):
    """stage/lib -> stage/usr/lib where root/lib is a symlink (merged /usr)."""
    for top in sorted(os.listdir(stage)):
        src = os.path.join(stage, top)
        target = os.path.join(root, top)
        if top == "usr" or not os.path.isdir(src) or os.path.islink(src) or not os.path.islink(target):
            continue
        _merge_tree(src, os.path.join(stage, "usr", top), replace=True)
        shutil.rmtree(src)


def _merge_tree(src, dst, replace):
    """Copy src's files into dst, symlinks as symlinks. Existing files in dst are kept unless
    replace. Returns (copied, kept)."""
    copied = kept = 0
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        out_dir = os.path.normpath(os.path.join(dst, rel))
        if os.path.islink(out_dir) or (os.path.exists(out_dir) and not os.path.isdir(out_dir)):
            # A directory of the package is a file or a link on the target: leave the target alone.
            kept += sum(len(f) for _, _, f in os.walk(dirpath))
            dirnames[:] = []
            continue
        os.makedirs(out_dir, exist_ok=True)
        # os.walk lists symlinks to directories among dirnames: copy them as links.
        for name in [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            dirnames.remove(name)
            filenames.append(name)
        for name in filenames:
            s, d = os.path.join(dirpath, name), os.path.join(out_dir, name)
            if os.path.lexists(d):
                if not replace:
                    kept += 1
                    continue
                os.remove(d)
            if os.path.islink(s):
                os.symlink(os.readlink(s), d)
            else:
                shutil.copy2(s, d)
            copied += 1
    return copied, kept


def install(debs_dir, root="/"):
    """Unpack every .deb of debs_dir into root without replacing what root has. Returns
    {"packages": [...], "copied": N, "kept": N}. Raises RuntimeError naming the package."""
    debs = sorted(n for n in os.listdir(debs_dir) if n.endswith(".deb"))
    if not debs:
        raise RuntimeError(f"{debs_dir}: no .deb files (make them with `scripts/gpu-check --download-debs "
                           f"{debs_dir}` on a Debian 12 machine and carry the folder over)")
    if shutil.which("dpkg-deb") is None:
        raise RuntimeError("dpkg-deb is not installed: it unpacks the carried packages")
    stage = tempfile.mkdtemp(prefix="fabkit-gpu-check-stage-")
    try:
        for deb in debs:
            r = subprocess.run(["dpkg-deb", "-x", os.path.join(debs_dir, deb), stage], capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"{deb}: dpkg-deb -x failed: {r.stderr.strip()}")
        _fold_symlinked_tops(stage, root)
        copied, kept = _merge_tree(stage, root, replace=False)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return {"packages": debs, "copied": copied, "kept": kept}
