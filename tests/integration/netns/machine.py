"""What hardware this machine has, for tests whose expectations depend on it (Python 3 stdlib only).

The pair tests run the NCCL and ibverbs all-reduce transports between network-namespace hosts on
this one machine. Where no GPU (or HCA) exists they must report "unavailable" with a reason; where
one does, NCCL may run ("ok") or refuse (two netns hosts share the GPU: "Duplicate GPU", or the
transport fails) and must then say why. Tests decide which from the machine, never by assuming
there is none.
"""
import glob
import os
import re
import shutil
import subprocess


def nvidia_smi_list(timeout_s=20):
    """(the `GPU N: NAME (UUID: GPU-...)` lines of `nvidia-smi -L`, why there are none, whether
    nvidia-smi answered). NVML's list: asking it makes no CUDA context. `answered` is False where
    nvidia-smi is installed but hung or could not start: "no GPU" would be a guess there, and a
    caller that measures a GPU must say it cannot run instead."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return [], "nvidia-smi is not installed", True
    try:
        r = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return [], "nvidia-smi -L did not answer within %d s (a hung driver?)" % timeout_s, False
    except OSError as e:
        return [], "nvidia-smi -L failed: %s" % e, False
    gpus = [l for l in r.stdout.splitlines() if l.startswith("GPU ")]
    if r.returncode == 0 and gpus:
        return gpus, "", True
    return [], "nvidia-smi -L lists no GPU (exit %d)" % r.returncode, True


def nvidia_smi_gpus():
    """(the `GPU N: ...` lines of `nvidia-smi -L`, why there are none): nvidia_smi_list, where a
    hung or failed nvidia-smi also counts as none (tests choose their expectation from it)."""
    gpus, why, _ = nvidia_smi_list()
    return gpus, why


def gpu_uuids():
    """(the GPUs' UUIDs, as CUDA_VISIBLE_DEVICES takes them, in nvidia-smi's order; why none)."""
    gpus, why = nvidia_smi_gpus()
    if not gpus:
        return [], why
    uuids = [m.group(1) for m in (re.search(r"\(UUID: (GPU-[0-9a-fA-F-]+)\)", l) for l in gpus) if m]
    return uuids, "" if uuids else "nvidia-smi -L names no GPU UUID: " + gpus[0]


def gpu_present():
    """(present, evidence): an NVIDIA GPU device node, or `nvidia-smi -L` listing a GPU."""
    nodes = sorted(p for p in glob.glob("/dev/nvidia[0-9]*") if os.path.basename(p)[6:].isdigit())
    if nodes:
        return True, "device nodes " + ", ".join(nodes)
    if shutil.which("nvidia-smi") is None:
        return False, "no /dev/nvidia<N> and no nvidia-smi"
    gpus, why = nvidia_smi_gpus()
    return (True, "nvidia-smi -L: " + gpus[0]) if gpus else (False, why)


def hca_present():
    """(present, evidence): an RDMA device in /sys/class/infiniband (shared by every netns)."""
    devs = sorted(os.listdir("/sys/class/infiniband")) if os.path.isdir("/sys/class/infiniband") else []
    if devs:
        return True, "RDMA devices " + ", ".join(devs)
    return False, "no RDMA device in /sys/class/infiniband"


def expected_statuses(transport):
    """(allowed statuses, why) for an all-reduce transport run between two netns hosts here."""
    if transport.startswith("nccl"):
        gpu, why = gpu_present()
        return (("ok", "failed", "unavailable") if gpu else ("unavailable",)), why
    if "ibverbs" in transport:
        hca, why = hca_present()
        return (("ok", "failed", "unavailable") if hca else ("unavailable",)), why
    return ("ok",), "a CPU socket transport runs everywhere"
