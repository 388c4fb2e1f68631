"""Running a golden case, the one normaliser, and JSON Schema validation with docs/schema/.

The normaliser replaces exactly what legitimately differs between runs and machines, nothing
else (tests/golden/README.md lists the rules):
  - the envelope's `generated_at`, and `build` (version and what the binary was built with);
  - this machine's host name where a command reports it (`hostname`, `created_on`, the
    `host` of a `fabtrain control list` job registered here);
  - the profile's `created_at` and `fabcheck_version`;
  - wall-clock timings (`locality.load_ms`, `gpus.query_ms`, `kernel_log.read_ms`) and the runtime hwloc library
    version (`locality.hwloc_version`);
  - the source tree and the run's temp dir inside strings (`<src>`, `<tmp>`);
  - fabtrain eval's loss and perplexity, rounded to 6 significant digits (float sums of a
    forward pass follow the BLAS build and the CPU's vector width).
Everything else is compared exactly, key order included (`schema_version` first is a contract).
"""
import difflib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import sysroots

sys.path.insert(0, os.path.join(sysroots.SOURCE_ROOT, "tests", "support"))
import json_schemas  # noqa: E402

SOURCE_ROOT = sysroots.SOURCE_ROOT
EXPECTED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected")


def load_schemas():
    """Every docs/schema/*.schema.json by $id and file name (tests/support/json_schemas.py)."""
    return json_schemas.schemas()


def validate(doc, schema_name):
    """Raises jsonschema.ValidationError naming the path of the first violation."""
    json_schemas.validate_doc(doc, schema_name)


def _sig6(x):
    return float("%.6g" % x)


def normalise(doc, tmp):
    """The document with the varying values replaced (see the module docstring)."""
    host = socket.gethostname()

    def strings(v):
        if isinstance(v, str):
            return v.replace(tmp, "<tmp>").replace(SOURCE_ROOT, "<src>")
        if isinstance(v, list):
            return [strings(x) for x in v]
        if isinstance(v, dict):
            return {k: strings(x) for k, x in v.items()}
        return v

    doc = strings(doc)
    if not isinstance(doc, dict):
        return doc
    if "generated_at" in doc and "kind" in doc:
        doc["generated_at"] = "<generated_at>"
    if "build" in doc and isinstance(doc["build"], dict):
        doc["build"] = "<build>"
    if doc.get("hostname") == host:
        doc["hostname"] = "<hostname>"
    prov = doc.get("provenance")
    if isinstance(prov, dict):
        prov["created_at"] = "<created_at>"
        prov["fabcheck_version"] = "<version>"
        if prov.get("created_on") == host:
            prov["created_on"] = "<hostname>"
    for job in doc.get("jobs") or []:  # fabtrain control list: a registration of this host
        if isinstance(job, dict) and job.get("host") == host:
            job["host"] = "<hostname>"
    loc = doc.get("locality")
    if isinstance(loc, dict):
        for k in ("load_ms", "hwloc_version"):
            if k in loc:
                loc[k] = "<%s>" % k
    gpus = doc.get("gpus")
    if isinstance(gpus, dict) and "query_ms" in gpus:
        gpus["query_ms"] = "<query_ms>"
    klog = doc.get("kernel_log")
    if isinstance(klog, dict) and "read_ms" in klog:
        klog["read_ms"] = "<read_ms>"
    if doc.get("kind") == "eval":
        for k in ("mean_loss", "perplexity"):
            if isinstance(doc.get(k), float):
                doc[k] = _sig6(doc[k])
    return doc


def run_case(case, fabcheck, fabtrain):
    """Runs one case in a fresh temp dir (its cwd); returns (exit code, parsed stdout, stderr, tmp),
    the caller removing tmp (removed here when the run fails). The environment is minimal so no
    NCCL_* or proxy variable of the caller leaks in."""
    tmp = tempfile.mkdtemp(prefix="fabkit-golden-")
    try:
        for name, builder in case.get("setup", {}).items():
            builder(os.path.join(tmp, name))
        binary = {"fabcheck": fabcheck, "fabtrain": fabtrain}[case["binary"]]
        argv = [binary] + [a.replace("{src}", SOURCE_ROOT).replace("{tmp}", tmp) for a in case["args"]]
        env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": tmp}
        env.update({k: v.replace("{src}", SOURCE_ROOT).replace("{tmp}", tmp)
                    for k, v in case.get("env", {}).items()})
        p = subprocess.run(argv, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
        try:
            doc = json.loads(p.stdout)
        except ValueError as e:
            raise AssertionError("%s: stdout is not one JSON document (%s); exit %d, stdout:\n%s\n"
                                 "stderr:\n%s" % (case["name"], e, p.returncode, p.stdout, p.stderr))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return p.returncode, doc, p.stderr, tmp


def render(case, code, doc, tmp):
    """The golden file's text: the command as given, its exit code and its normalised output."""
    golden = {"command": [case["binary"]] + case["args"], "exit_code": code,
              "output": normalise(doc, tmp)}
    return json.dumps(golden, indent=2, ensure_ascii=False) + "\n"


def expected_path(case):
    return os.path.join(EXPECTED_DIR, case["name"] + ".json")


def diff(expected, actual, name):
    return "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                        "expected/%s.json" % name, "actual output", n=3))
