// fabcheck node: inspect this node (or a --sysroot fixture tree) and report findings.
#include <unistd.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "cli/progress_option.h"
#include "common/atomic_file.h"
#include "common/errors.h"
#include "fabkit/config.h"
#include "fabric/gpu_active/gpu_active_check.h"
#include "ofi/libfabric_child.h"
#include "ofi/ofi_json.h"
#include "probes/gpu/gpu_facts.h"
#include "probes/ib_qos/mad_codec.h"
#include "probes/kernel_log/kernel_log_facts.h"
#include "probes/node_probe.h"
#include "reports/html/html_report.h"
#include "reports/prom/prom_text.h"
#include "reports/report_render.h"
#include "slurm/health.h"
#include "slurm/health_action.h"

namespace fabkit::cli {
namespace {

struct NodeArgs {
  bool json = false;
  std::string sysroot;
  std::string peer;
  std::string peer_gid;  // an IB peer port's GID: also ask the SA for the path to it
  std::string topo;
  int counter_interval_ms = 50;  // probe_context.h says why
  std::string prom;              // node_exporter textfile to write
  bool slurm_health = false;     // drain this node on fail findings (docs/cluster.md)
  bool dry_run = false;
  std::string node_name;  // Slurm NodeName (default: SLURMD_NODENAME, else short hostname)
  int drain_timeout_ms = 10000;
  std::string html;              // also write the report as HTML (docs/reports.md)
  bool no_progress = false;
  std::string nvml_replay;  // NVML answers recorded with --nvml-record instead of the driver's
  std::string nvml_record;  // write this machine's NVML answers as a replayable fixture
  std::string qos_replay;   // DCB and ethtool answers of the RoCE netdevs from a fixture
  std::string ib_qos_replay;  // PortInfo, SL-to-VL and PathRecord answers of the IB ports
  std::string ofi_replay;     // libfabric's answers recorded with --ofi-record on another node
  std::string ofi_record;     // write this machine's libfabric answers as a replayable fixture
  std::string since;        // kernel log window: "2h", an RFC 3339 time; "" = since boot
  bool active = false;      // the active GPU check (docs/gpu-node.md), after the passive probes
  double active_budget_s = probes::GpuActiveSettings{}.budget_s;
};

// --active: measures this machine's GPUs, so it has no meaning on a copied tree.
void check_active_args(const NodeArgs& a) {
  if (a.active && !a.sysroot.empty())
    throw UsageError("--active measures this machine's GPUs and cannot run on a --sysroot tree (" +
                     a.sysroot + "): drop one of the two");
  // The replayed gpus section would describe another machine than the GPUs measured.
  if (a.active && !a.nvml_replay.empty())
    throw UsageError(
        "--active measures this machine's GPUs and cannot be combined with "
        "--nvml-replay " +
        a.nvml_replay + " (another machine's NVML answers)");
}

fabric::GpuActiveOptions active_options(const NodeArgs& a) {
  fabric::GpuActiveOptions o;
  o.settings.budget_s = a.active_budget_s;
  return o;
}

std::string slurm_node_name(const NodeArgs& a, const Environment& env) {
  if (!a.node_name.empty()) return a.node_name;
  // Slurm sets SLURMD_NODENAME for HealthCheckProgram, prologs and epilogs.
  if (auto n = env.get("SLURMD_NODENAME"); n && !n->empty()) return *n;
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0')
    throw UsageError("--slurm-health: cannot tell this node's Slurm name; give --node-name NAME");
  std::string h = buf;
  return h.substr(0, h.find('.'));  // NodeName is the short name by Slurm's convention
}

// --prom and --slurm-health: after the report, before it is rendered.
int health_and_prom(const NodeArgs& a, const Environment& env, const Report& r) {
  if (!a.prom.empty()) {
    double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    auto families = reports::prom::node_families(report_to_json(r));
    families.push_back(reports::prom::check_timestamp(now));
    write_output_file("--prom", a.prom, reports::prom::render(families));
  }
  if (!a.slurm_health) return reports::render_report(r, a.json, std::cout);
  auto d = slurm::decide_health(r, slurm_node_name(a, env));
  if (d.drain && !a.dry_run) slurm::apply_drain(d, a.drain_timeout_ms);
  if (a.json) {
    Report with = r;
    with.sections.push_back({"health",
                             {{"node", d.node},
                              {"drain", d.drain},
                              {"reason", d.drain ? Json(d.reason) : Json()},
                              {"drained", d.drain && !a.dry_run}}});
    reports::render_json(with, std::cout);
  } else {
    std::cout << slurm::health_line(d, r, a.dry_run) << "\n";
  }
  // Not the findings' exit code: as a prolog, any non-zero exit makes Slurm drain the node
  // itself, and warnings must not drain.
  return d.drain ? kExitFindings : kExitClean;
}

// --nvml-record FILE: what this machine's NVML answers, in the fixture format --nvml-replay reads
// (docs/gpu-node.md). Its own NVML pass before the node check, which then reads NVML again.
void record_nvml(const NodeArgs& a, const ProbeContext& ctx) {
  if (!ctx.roots.live || ctx.options.nvml_replay)
    throw UsageError(
        "--nvml-record records this machine's NVML: it cannot be combined with "
        "--sysroot or --nvml-replay");
  probes::GpuFacts facts = probes::gather_gpu(ctx);
  if (!facts.driver_loaded)
    throw UsageError("--nvml-record: NVML is not usable here (" +
                     facts.nvml_error.value_or("unknown reason") +
                     "); run it on a node where `nvidia-smi` works");
  write_output_file("--nvml-record", a.nvml_record,
                    probes::nvml_fixture_from_facts(facts).dump(2) + "\n");
}

// --ofi-record FILE: what this machine's libfabric answers, in the format --ofi-replay reads
// (tests/fixtures/libfabric/README.md). A libfabric that cannot be loaded is recorded as such: that
// answer replays too.
void record_ofi(const NodeArgs& a, const ProbeContext& ctx) {
  if (!ctx.roots.live || ctx.options.ofi_replay)
    throw UsageError(
        "--ofi-record records this machine's libfabric: it cannot be combined with "
        "--sysroot or --ofi-replay");
  auto api = ofi::make_libfabric_child_api("/proc/self/exe");
  write_output_file("--ofi-record", a.ofi_record,
                    ofi::discovery_to_json(api->discover()).dump(2) + "\n");
}

int run_node(const NodeArgs& a) {
  if (!a.html.empty()) check_output_path("--html", a.html);
  if (!a.prom.empty()) check_output_path("--prom", a.prom);
  if (!a.nvml_record.empty()) check_output_path("--nvml-record", a.nvml_record);
  if (!a.ofi_record.empty()) check_output_path("--ofi-record", a.ofi_record);
  check_active_args(a);
  ProbeContext ctx = node_probe_context(a.sysroot);
  if (!a.nvml_replay.empty()) ctx.options.nvml_replay = a.nvml_replay;
  if (!a.qos_replay.empty()) ctx.options.qos_replay = a.qos_replay;
  if (!a.ib_qos_replay.empty()) ctx.options.ib_qos_replay = a.ib_qos_replay;
  if (!a.ofi_replay.empty()) ctx.options.ofi_replay = a.ofi_replay;
  ctx.options.ofi_discovery_program = "/proc/self/exe";
  if (!a.nvml_record.empty()) record_nvml(a, ctx);
  if (!a.ofi_record.empty()) record_ofi(a, ctx);
  if (!a.peer.empty()) ctx.options.peer = a.peer;
  if (!a.peer_gid.empty()) {
    std::array<uint8_t, 16> raw{};
    if (!probes::gid_from_text(a.peer_gid, raw))
      throw UsageError("--peer-gid '" + a.peer_gid +
                       "' is not a GID; give it as sysfs prints it (ports/N/gids/0 of the peer's "
                       "IB port, e.g. fe80:0000:0000:0000:b859:9f03:00d6:5b3e)");
    ctx.options.ib_peer_gid = a.peer_gid;
  }
  if (!a.topo.empty()) ctx.options.topo_file = a.topo;
  ctx.options.rdma_counter_interval_ms = a.counter_interval_ms;
  if (!a.since.empty()) ctx.options.kernel_log_since = probes::parse_since(a.since);
  auto progress = make_progress(a.no_progress);
  ctx.progress = progress.get();
  Report r = probe_this_node(ctx);
  if (a.active) fabric::append_gpu_active(r, active_options(a), ctx.roots, ctx.env, ctx.progress);
  progress.reset();  // its line is gone before anything else is printed
  // From the JSON document, as `fabcheck report` does, so both render the same thing.
  if (!a.html.empty())
    write_output_file(
        "--html", a.html,
        reports::html::render_html(
            {{"fabcheck node", reports::InputKind::kNodeReport, report_to_json(r), {}}},
            r.generated_at));
  if (a.slurm_health || !a.prom.empty()) return health_and_prom(a, ctx.env, r);
  return reports::render_report(r, a.json, std::cout);
}

}  // namespace

void register_node_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<NodeArgs>();
  auto* sub = app.add_subcommand("node",
                                 "Inspect this node: RDMA, limits, interfaces, NCCL "
                                 "settings, topology, locality, GPUDirect, GPUs");
  sub->add_flag("--json", args->json, "Print the report as JSON (docs/json-schema.md)");
  sub->add_option("--sysroot", args->sysroot,
                  "Read sys/, proc/, dev/, etc/ under DIR instead of / (fixtures, copied trees)");
  sub->add_option("--peer", args->peer,
                  "Host or address of a peer: recommend the interface on its subnet");
  sub->add_option("--peer-gid", args->peer_gid,
                  "GID of a peer's InfiniBand port: also ask the subnet manager for the path to it "
                  "and check its SL (ib_qos)");
  sub->add_option("--topo", args->topo, "NCCL topology XML to check (default: NCCL_TOPO_FILE)");
  sub->add_option("--html", args->html, "Also write the report as one self-contained HTML file");
  sub->add_option("--counter-interval-ms", args->counter_interval_ms,
                  "Read RDMA port error counters (and PCIe AER totals) twice this far apart and "
                  "report what rose (0: once)")
      ->check(CLI::Range(0, 60000));
  sub->add_option("--since", args->since,
                  "Judge kernel log records from this point on: a duration before now (2h, 30m, "
                  "1d) or an RFC 3339 time (default: since boot)");
  sub->add_option("--prom", args->prom,
                  "Also write Prometheus node_exporter textfile metrics here (atomically)");
  sub->add_flag("--slurm-health", args->slurm_health,
                "Slurm health check: print one line, and drain this node (scontrol update "
                "State=DRAIN) when a finding is at fail");
  sub->add_flag("--dry-run", args->dry_run,
                "With --slurm-health: say what would be drained, drain nothing");
  sub->add_option("--node-name", args->node_name,
                  "With --slurm-health: this node's Slurm NodeName (default SLURMD_NODENAME, else "
                  "the short hostname)");
  sub->add_option("--drain-timeout-ms", args->drain_timeout_ms, "Bound on the scontrol call")
      ->check(CLI::Range(100, 120000));
  sub->add_option("--nvml-replay", args->nvml_replay,
                  "Use NVML answers recorded with --nvml-record (FILE) instead of this machine's "
                  "driver; with --sysroot, the GPUs of a captured node")
      ->check(CLI::ExistingFile);
  sub->add_option(
         "--qos-replay", args->qos_replay,
         "Use recorded DCB (PFC, trust, APP table) and ethtool statistics answers for the "
         "RoCE netdevs (FILE, tests/fixtures/roce_qos/README.md) instead of this kernel's; "
         "with --sysroot, the QoS of a captured node")
      ->check(CLI::ExistingFile);
  sub->add_option("--ib-qos-replay", args->ib_qos_replay,
                  "Use recorded PortInfo, SL-to-VL table and PathRecord answers for the "
                  "InfiniBand ports (FILE, tests/fixtures/ib_qos/README.md) instead of this "
                  "host's umad devices; with --sysroot, the IB QoS of a captured node")
      ->check(CLI::ExistingFile);
  sub->add_option("--ofi-replay", args->ofi_replay,
                  "Use libfabric answers (fi_getinfo's RDM providers, the library's version) "
                  "recorded with --ofi-record (FILE, tests/fixtures/libfabric/README.md) instead "
                  "of this machine's libfabric; with --sysroot, the libfabric of a captured node")
      ->check(CLI::ExistingFile);
  sub->add_option("--ofi-record", args->ofi_record,
                  "Also write what this machine's libfabric answers to FILE (a fixture for "
                  "--ofi-replay)");
  sub->add_option("--nvml-record", args->nvml_record,
                  "Also write what this machine's NVML answers to FILE (a fixture for "
                  "--nvml-replay and the tests' NVML fake)");
  auto* active =
      sub->add_flag("--active", args->active,
                    "Also measure the GPUs (bf16 GEMM, memory and PCIe copies, intra-node NCCL "
                    "all-reduce) against what this node should reach (docs/gpu-node.md)");
  sub->add_option("--active-budget-s", args->active_budget_s,
                  "With --active: the check's time limit in seconds; what is still running then is "
                  "stopped and reported")
      ->check(CLI::Range(10.0, 3600.0))
      ->needs(active);
  add_no_progress_flag(sub, &args->no_progress);
  sub->callback([args, exit_code] {
    *exit_code = run_command("node", args->json, [&] { return run_node(*args); });
  });

  // libfabric's discovery in a child of `fabcheck node` and the agent (ofi/libfabric_child.h).
  auto* discover = app.add_subcommand(ofi::kDiscoverSubcommand,
                                      "List libfabric's RDM providers as JSON (internal)");
  discover->group("");
  discover->callback([exit_code] {
    *exit_code = run_command(ofi::kDiscoverSubcommand, false, [] {
      return ofi::discover_child_main(Environment::from_process());
    });
  });
}

}  // namespace fabkit::cli
