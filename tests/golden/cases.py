"""Every deterministic `--json` invocation the goldens pin: fixture inputs only, no network, no
GPU, no live probe. Each case names its binary, its arguments ({src} = the source tree, {tmp} =
the run's temp dir, which is also its working directory), what to build in the temp dir first,
and the schema in docs/schema/ its output must satisfy. expected/<name>.json is its golden."""
import json
import os

import sysroots

FIX = "{src}/tests/fixtures"
# Where the EFA installer puts aws-ofi-nccl, as the EFA cases' LD_LIBRARY_PATH names it.
EFA_LD_PATH = "/" + sysroots.AWS_OFI_NCCL_DIR


def _derive(src, change):
    """Writes a fixture document with one deliberate change (the inputs of the baseline cases)."""
    def build(path):
        with open(os.path.join(sysroots.FIXTURES, src)) as f:
            doc = json.load(f)
        change(doc)
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)
    return build


def _pair_regressed(doc):
    """gloo-tcp 40% slower at every size; nccl transports unchanged (unavailable)."""
    for t in doc["pair"]["transports"]:
        if t["transport"] == "gloo-tcp":
            for s in t["sizes"]:
                s["busbw_gbps"] *= 0.6
                s["algbw_gbps"] *= 0.6
            t["peak_busbw_gbps"] *= 0.6
        if t["transport"] == "fabkit-socket":
            t["status"], t["reason"], t["sizes"] = "failed", "rank 1: connection reset", []


def _node_degraded(doc):
    """mlx5_1 port 1 DOWN, mlx5_0 at 100 instead of 200 Gbit/s, one GPU gone."""
    for d in doc["rdma"]["devices"]:
        for p in d["ports"]:
            if d["name"] == "mlx5_1":
                p["state"], p["state_code"] = "DOWN", 1
            if d["name"] == "mlx5_0":
                p["rate_gbps"], p["rate"] = 100, "100 Gb/sec (4X EDR)"
    doc["gpus"]["count"] -= 1
    doc["gpus"]["devices"] = doc["gpus"]["devices"][:-1]


def _node_gpu_errors(doc):
    """Since the saved run: GPU 0 gained 3 correctable ECC errors, GPU 1 3 uncorrectable ones
    (aggregate 2 -> 5), GPU 2 a remapped row, GPU 5 four NVLink replays."""
    d = doc["gpus"]["devices"]
    for counter in ("aggregate", "volatile"):
        d[0]["health"]["ecc"][counter]["corrected"] += 3
        d[1]["health"]["ecc"][counter]["uncorrected"] += 3
    d[2]["health"]["remapped_rows"]["uncorrected"] += 1
    d[5]["health"]["nvlinks"][3]["replay"] += 4


def _bad_nvml_fixture(path):
    """A recorded NVML file with a misspelt member: refused, naming it."""
    with open(path, "w") as f:
        json.dump({"devices": [{"name": "x", "uuid": "GPU-1", "bus_id": "00000000:18:00.0",
                                "ecc_mod": {"current": True, "pending": True}}]}, f)
def _gpu_active_dropped(doc):
    """GPU 1's GEMM 20% slower (throttled), GPU 0's h2d figure gone (its step failed)."""
    g1 = doc["gpu_active"]["gpus"][1]
    for f in g1["figures"]:
        if f["name"] == "gemm_bf16":
            f["measured"] *= 0.8
    g0 = doc["gpu_active"]["gpus"][0]
    g0["figures"] = [f for f in g0["figures"] if f["name"] != "h2d"]


def _error_document_of(golden):
    """The error document a command printed (an error golden's output), as a file to read back."""
    def build(path):
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected",
                               golden + ".json")) as f:
            doc = json.load(f)["output"]
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)
    return build


def _write_json(doc):
    def build(path):
        with open(path, "w") as f:
            json.dump(doc, f)
    return build


NCCL_LOGS = ["nccl_2.18_errors", "nccl_2.18_ib_gdr", "nccl_2.21_socket_fallback", "nccl_2.21_roce",
             "nccl_2.21_aws_ofi", "nccl_2.4.7_ib_bootstrap_net_socket", "nccl_2.23_plugin_init_failed"]

NCCL_REAL_LOGS = ["nccl_1235_closed_then_oom", "llamafactory_6849_remote_error_broken_pipe",
                  "nccl_224_roce_2.4.2_mpi", "nccl_1000_plugin_v6_then_v5",
                  # IB async events reported (ib_events), benign ones no failure
                  "heldout16_deepspeedexamples_310_client_reregistration_after_init"]

CASES = [
    # fabcheck node on fixture trees
    {"name": "node-sysroot-ib-roce", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_ib_roce_node}, "args": ["node", "--json", "--sysroot", "root"]},
    {"name": "node-sysroot-ib-roce-topo", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_ib_roce_node},
     "env": {"NCCL_TOPO_FILE": FIX + "/topo/nccl_eth_and_ib_nics.xml", "NCCL_IB_HCA": "mlx5_0"},
     "args": ["node", "--json", "--sysroot", "root"]},
    # EFA instances (tests/fixtures/efa), each with a stand-in aws-ofi-nccl (sysroots.py): healthy p4d; p5 with 31 of 32 EFA devices; a g5 run
    # with the p4d job script's FI_EFA_USE_DEVICE_RDMA=1.
    {"name": "node-sysroot-efa-p4d", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_efa_p4d_node},
     "env": {"FI_PROVIDER": "efa", "LD_LIBRARY_PATH": EFA_LD_PATH},
     "args": ["node", "--json", "--sysroot", "root"]},
    {"name": "node-sysroot-efa-p4d-memlock", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_efa_p4d_memlock_node}, "env": {"LD_LIBRARY_PATH": EFA_LD_PATH},
     "args": ["node", "--json", "--sysroot", "root"]},
    {"name": "node-sysroot-efa-p5-missing", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_efa_p5_missing_node}, "env": {"LD_LIBRARY_PATH": EFA_LD_PATH},
     "args": ["node", "--json", "--sysroot", "root"]},
    {"name": "node-sysroot-efa-g5-device-rdma", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_efa_g5_node},
     "env": {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1", "LD_LIBRARY_PATH": EFA_LD_PATH},
     "args": ["node", "--json", "--sysroot", "root"]},
    {"name": "node-sysroot-empty", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_empty_node}, "args": ["node", "--json", "--sysroot", "root"]},
    {"name": "node-sysroot-slurm-health-dry-run", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_ib_roce_node},
     "args": ["node", "--json", "--sysroot", "root", "--slurm-health", "--dry-run",
              "--node-name", "gpu-07"]},
    # Issue #23: RoCE QoS with recorded DCB and ethtool answers (tests/fixtures/roce_qos)
    {"name": "node-sysroot-roce-qos-healthy", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_roce_qos_healthy_node}, "env": {"NCCL_IB_TC": "106"},
     "args": ["node", "--json", "--sysroot", "root", "--qos-replay",
              FIX + "/roce_qos/healthy.json"]},
    {"name": "node-sysroot-roce-qos-pfc-off", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_roce_qos_pfc_off_node}, "env": {"NCCL_IB_TC": "106"},
     "args": ["node", "--json", "--sysroot", "root", "--qos-replay",
              FIX + "/roce_qos/pfc_off_nccl_priority.json"]},
    # Issue #23, InfiniBand: the SL NCCL uses against the SM's tables (tests/fixtures/ib_qos)
    {"name": "node-sysroot-ib-qos-healthy", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_ib_roce_node},
     "args": ["node", "--json", "--sysroot", "root", "--ib-qos-replay",
              FIX + "/ib_qos/healthy.json"]},
    {"name": "node-sysroot-ib-qos-sl-to-vl15", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_ib_roce_node}, "env": {"NCCL_IB_SL": "3"},
     "args": ["node", "--json", "--sysroot", "root", "--ib-qos-replay",
              FIX + "/ib_qos/sl_to_vl15.json"]},
    # Issue #40: libfabric answers (tests/fixtures/libfabric): a p4d's efa providers, and
    # FI_PROVIDER=efa against Debian's libfabric, which offers no efa provider here
    {"name": "node-ofi-replay-p4d", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_empty_node}, "env": {"FI_PROVIDER": "efa"},
     "args": ["node", "--json", "--sysroot", "root", "--ofi-replay",
              FIX + "/libfabric/p4d-efa-1.11.2.json"]},
    {"name": "node-ofi-replay-provider-not-offered", "binary": "fabcheck",
     "schema": "node.schema.json", "setup": {"root": sysroots.build_empty_node},
     "env": {"FI_PROVIDER": "efa"},
     "args": ["node", "--json", "--sysroot", "root", "--ofi-replay",
              FIX + "/libfabric/debian-1.17-tcp-recorded.json"]},
    # fabcheck node with recorded NVML answers (tests/fixtures/nvml): the GPU health section
    {"name": "node-nvml-h100-healthy", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_empty_node},
     "args": ["node", "--json", "--sysroot", "root", "--nvml-replay",
              FIX + "/nvml/h100_sxm_8gpu_healthy.json"]},
    {"name": "node-nvml-h100-faults", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_empty_node},
     "args": ["node", "--json", "--sysroot", "root", "--nvml-replay",
              FIX + "/nvml/h100_faults.json"]},
    {"name": "node-nvml-a100-old-driver", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_empty_node},
     "args": ["node", "--json", "--sysroot", "root", "--nvml-replay",
              FIX + "/nvml/a100_old_driver_r470.json"]},
    {"name": "node-nvml-faults-slurm-health-dry-run", "binary": "fabcheck",
     "schema": "node.schema.json", "setup": {"root": sysroots.build_empty_node},
     "args": ["node", "--json", "--sysroot", "root", "--nvml-replay",
              FIX + "/nvml/h100_remap_pending.json", "--slurm-health", "--dry-run",
              "--node-name", "gpu-07"]},
    # Issue #18: a GPU at Gen4 x8 of Gen5 x16 and an Xid 79 after a fatal AER error
    {"name": "node-sysroot-gpu-gen4x8-xid79", "binary": "fabcheck", "schema": "node.schema.json",
     "setup": {"root": sysroots.build_gpu_node_degraded},
     "args": ["node", "--json", "--sysroot", "root"]},
    {"name": "node-sysroot-gpu-gen4x8-xid79-slurm-health", "binary": "fabcheck",
     "schema": "node.schema.json", "setup": {"root": sysroots.build_gpu_node_degraded},
     "args": ["node", "--json", "--sysroot", "root", "--slurm-health", "--dry-run",
              "--node-name", "gpu-07"]},
    # fabcheck cluster --plan-only: the schedule, nothing launched
    {"name": "cluster-plan-only-5-hosts", "binary": "fabcheck", "schema": "cluster-report.schema.json",
     "args": ["cluster", "--plan-only", "--json", "h0", "h1", "h2", "h3", "h4"]},
    {"name": "cluster-plan-only-ring-8-hosts", "binary": "fabcheck",
     "schema": "cluster-report.schema.json",
     "args": ["cluster", "--plan-only", "--json", "--pairs", "ring", "--max-parallel", "2",
              "--per-pair-s", "12.5", "n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08"]},
    # --pairs auto within --budget over a topology.conf: ring and shifts, their coverage, and the
    # bad-link search planned for the pairs they leave (its estimate kept out of the budget)
    {"name": "cluster-plan-only-topology-16-hosts", "binary": "fabcheck",
     "schema": "cluster-report.schema.json",
     "args": ["cluster", "--plan-only", "--json", "--topology", FIX + "/slurm/topology-4-leaves.conf",
              "--budget", "2m", "--max-parallel", "4", "--per-pair-s", "6",
              "n16", "n15", "n14", "n13", "n12", "n11", "n10", "n09",
              "n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08"]},
    # fabcheck topo on fixture XML
    {"name": "topo-nccl-eth-and-ib", "binary": "fabcheck", "schema": "topo.schema.json",
     "args": ["topo", "--json", FIX + "/topo/nccl_eth_and_ib_nics.xml"]},
    {"name": "topo-azure-ndv5", "binary": "fabcheck", "schema": "topo.schema.json",
     "args": ["topo", "--json", FIX + "/real/nccl_topo/azure_ndv5-topo.xml"]},
    {"name": "topo-hwloc-2n6c", "binary": "fabcheck", "schema": "topo.schema.json",
     "args": ["topo", "--json", FIX + "/real/hwloc/hwloc_24em64t-2n6c2t-pci.xml"]},
    {"name": "topo-hwloc-nvlink-distances", "binary": "fabcheck", "schema": "topo.schema.json",
     "args": ["topo", "--json", FIX + "/topo/hwloc_nvlink_2gpu_distances.xml"]},
] + [
    {"name": "nccl-log-" + log.replace("nccl_", "").replace("_", "-"), "binary": "fabcheck",
     "schema": "nccl-log.schema.json", "args": ["nccl-log", "--json", FIX + "/nccl_log/" + log + ".log"]}
    for log in NCCL_LOGS
] + [
    {"name": "nccl-log-expect-socket", "binary": "fabcheck", "schema": "nccl-log.schema.json",
     "args": ["nccl-log", "--json", "--expect", "Socket", FIX + "/nccl_log/nccl_2.18_ib_gdr.log"]},
    # real logs of failed jobs (tests/fixtures/nccl_log/real/README.md): a cause and its
    # consequences across processes, PyTorch's wrapping only, the 2.4 bootstrap-socket trap
] + [
    {"name": "nccl-log-real-" + log.replace("_", "-"), "binary": "fabcheck",
     "schema": "nccl-log.schema.json",
     "args": ["nccl-log", "--json", FIX + "/nccl_log/real/" + log + ".log"]}
    for log in NCCL_REAL_LOGS
] + [
    {"name": "nccl-log-real-two-files", "binary": "fabcheck", "schema": "nccl-log.schema.json",
     "args": ["nccl-log", "--json", FIX + "/nccl_log/real/llamafactory_7396_watchdog.log",
              FIX + "/nccl_log/real/nccl_795_broken_pipe.log"]},
    # profiles: built from saved reports, validated against a fixture tree, emitted as JSON
    {"name": "profile-roce-from-reports", "binary": "fabcheck", "schema": "cluster.schema.json",
     "args": ["profile", FIX + "/profile/node-roce-a.json", FIX + "/profile/node-roce-b.json",
              FIX + "/profile/pair-roce-a-roce-b.json"]},
    {"name": "validate-roce-profile-topo-file-missing", "binary": "fabcheck",
     "schema": "validate.schema.json", "setup": {"root": sysroots.build_ib_roce_node},
     "args": ["validate", FIX + "/profile/cluster-roce.json", "--json", "--sysroot", "root",
              "--host", "roce-a"]},
    {"name": "validate-roce-profile-topo-file-present", "binary": "fabcheck",
     "schema": "validate.schema.json", "setup": {"root": sysroots.build_ib_roce_node_with_topo},
     "args": ["validate", FIX + "/profile/cluster-roce.json", "--json", "--sysroot", "root",
              "--host", "roce-a"]},
    {"name": "validate-ib-profile-on-ib-roce-tree", "binary": "fabcheck",
     "schema": "validate.schema.json", "setup": {"root": sysroots.build_ib_roce_node},
     "args": ["validate", FIX + "/profile/cluster-ib.json", "--json", "--sysroot", "root",
              "--host", "gpu-ib-01"]},
    {"name": "emit-env-json-roce-a", "binary": "fabcheck", "schema": "emit-env.schema.json",
     "args": ["emit-env", "--format", "json", "--profile", FIX + "/profile/cluster-roce.json",
              "--host", "roce-a"]},
    {"name": "emit-env-json-sysroot-unmeasured", "binary": "fabcheck",
     "schema": "emit-env.schema.json", "setup": {"root": sysroots.build_ib_roce_node},
     "args": ["emit-env", "--format", "json", "--sysroot", "root", "--host", "sr-node"]},
    # fabcheck report on the saved report fixtures
    {"name": "report-baseline-pair-same", "binary": "fabcheck", "schema": "baseline.schema.json",
     "args": ["report", "--json", "--baseline", FIX + "/reports/pair-netns-veth.json",
              FIX + "/reports/pair-netns-veth.json"]},
    {"name": "report-baseline-pair-regressed", "binary": "fabcheck",
     "schema": "baseline.schema.json",
     "setup": {"pair-regressed.json": _derive("reports/pair-netns-veth.json", _pair_regressed)},
     "args": ["report", "--json", "--baseline", FIX + "/reports/pair-netns-veth.json",
              "pair-regressed.json"]},
    {"name": "report-baseline-node-degraded", "binary": "fabcheck",
     "schema": "baseline.schema.json",
     "setup": {"node-degraded.json": _derive("profile/node-gpu-ib-01.json", _node_degraded)},
     "args": ["report", "--json", "--baseline", FIX + "/profile/node-gpu-ib-01.json",
              "node-degraded.json"]},
    {"name": "report-baseline-node-gpu-errors", "binary": "fabcheck",
     "schema": "baseline.schema.json",
     "setup": {"node-gpu-errors.json": _derive("reports/node-h100-faults.json", _node_gpu_errors)},
     "args": ["report", "--json", "--baseline", FIX + "/reports/node-h100-faults.json",
              "node-gpu-errors.json"]},
    {"name": "report-baseline-node-gpu-active-dropped", "binary": "fabcheck",
     "schema": "baseline.schema.json",
     "setup": {"node-gpu-active-now.json": _derive("reports/node-gpu-active-h100.json", _gpu_active_dropped)},
     "args": ["report", "--json", "--baseline", FIX + "/reports/node-gpu-active-h100.json",
              "node-gpu-active-now.json"]},
    {"name": "report-html-prom-written", "binary": "fabcheck", "schema": "report-written.schema.json",
     "args": ["report", "--json", "--html", "{tmp}/r.html", "--prom", "{tmp}/pair.prom",
              FIX + "/reports/pair-netns-veth.json"]},
    # error documents: bad flags, bad files
    {"name": "error-node-unknown-flag", "binary": "fabcheck", "schema": "error.schema.json",
     "args": ["node", "--json", "--no-such-flag"]},
    {"name": "error-node-missing-sysroot", "binary": "fabcheck", "schema": "error.schema.json",
     "args": ["node", "--json", "--sysroot", "/nonexistent/fabkit"]},
    {"name": "error-node-nvml-replay-typo", "binary": "fabcheck", "schema": "error.schema.json",
     "setup": {"root": sysroots.build_empty_node, "bad-nvml.json": _bad_nvml_fixture},
     "args": ["node", "--json", "--sysroot", "root", "--nvml-replay", "bad-nvml.json"]},
    {"name": "error-node-active-nvml-replay", "binary": "fabcheck", "schema": "error.schema.json",
     "args": ["node", "--json", "--active", "--nvml-replay", FIX + "/nvml/a100_old_driver_r470.json"]},
    {"name": "error-node-active-sysroot", "binary": "fabcheck", "schema": "error.schema.json",
     "setup": {"root": sysroots.build_empty_node},
     "args": ["node", "--json", "--active", "--sysroot", "root"]},
    {"name": "error-topo-graph-file", "binary": "fabcheck", "schema": "error.schema.json",
     "args": ["topo", "--json", FIX + "/real/nccl_topo/azure_ncv4-graph.xml"]},
    {"name": "error-nccl-log-missing-file", "binary": "fabcheck", "schema": "error.schema.json",
     "args": ["nccl-log", "--json", "{tmp}/no-such.log"]},
    {"name": "error-validate-not-a-profile", "binary": "fabcheck", "schema": "error.schema.json",
     "args": ["validate", FIX + "/reports/pair-netns-veth.json", "--json"]},
    # fabcheck report given an error document (a failed run saved as if it were a report): a
    # usage error naming it, also when its `error` has another shape (was an internal error, exit 3)
    {"name": "error-report-given-an-error-document", "binary": "fabcheck",
     "schema": "error.schema.json",
     "setup": {"failed-node.json": _error_document_of("error-node-missing-sysroot")},
     "args": ["report", "--json", "failed-node.json"]},
    {"name": "error-report-given-an-odd-error-document", "binary": "fabcheck",
     "schema": "error.schema.json",
     "setup": {"odd-error.json": _write_json({"schema_version": 1, "kind": "node",
                                              "error": "the probe was killed"})},
     "args": ["report", "--json", "odd-error.json"]},
    {"name": "error-report-baseline-kinds-differ", "binary": "fabcheck",
     "schema": "error.schema.json",
     "args": ["report", "--json", "--baseline", FIX + "/reports/pair-netns-veth.json",
              FIX + "/profile/node-roce-a.json"]},
]
