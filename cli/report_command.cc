// fabcheck report: render saved JSON documents (node, pair, cluster reports, profiles,
// metrics.jsonl) as one offline HTML file or Prometheus textfile lines, or judge a pair, node or
// cluster run against a saved baseline (docs/reports.md).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "common/errors.h"
#include "reports/baseline/cluster_baseline.h"
#include "reports/baseline/node_baseline.h"
#include "reports/baseline/pair_baseline.h"
#include "reports/html/html_report.h"
#include "reports/input_document.h"
#include "reports/prom/prom_text.h"
#include "reports/report_render.h"

namespace fabkit::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> inputs;
  std::string html, prom, baseline;
  reports::baseline::BaselineOptions opts;
  // Its regression_pct and expect_link_fraction are taken from opts (one flag each for all kinds).
  reports::baseline::ClusterBaselineOptions cluster_opts;
  bool json = false;
};

int run_baseline(const ReportArgs& a) {
  if (a.inputs.size() != 1)
    throw UsageError(
        "--baseline OLD.json compares one new report: fabcheck report --baseline "
        "OLD.json NEW.json (got " +
        std::to_string(a.inputs.size()) + " inputs)");
  auto old_doc = reports::load_input(a.baseline);
  auto new_doc = reports::load_input(a.inputs[0]);
  using reports::InputKind;
  bool pair = old_doc.kind == InputKind::kPairReport && new_doc.kind == InputKind::kPairReport;
  bool node = old_doc.kind == InputKind::kNodeReport && new_doc.kind == InputKind::kNodeReport;
  bool cluster =
      old_doc.kind == InputKind::kClusterReport && new_doc.kind == InputKind::kClusterReport;
  if (!pair && !node && !cluster)
    throw UsageError(a.baseline + " is a " + reports::to_string(old_doc.kind) + ", " + a.inputs[0] +
                     " a " + reports::to_string(new_doc.kind) +
                     "; --baseline compares two reports of one kind: pair, node or cluster");
  Report r = new_report("baseline");
  std::string table;
  try {
    if (pair) {
      auto res = reports::baseline::compare_pair_baseline(old_doc.doc, new_doc.doc, a.opts);
      r.findings = res.findings;
      r.sections.push_back(
          {"baseline", reports::baseline::baseline_to_json(res, a.opts, a.baseline, a.inputs[0])});
      table = reports::baseline::baseline_table_text(res, a.opts);
    } else if (cluster) {
      auto o = a.cluster_opts;
      o.regression_pct = a.opts.regression_pct;
      o.expect_link_fraction = a.opts.expect_link_fraction;
      auto res = reports::baseline::compare_cluster_baseline(old_doc.doc, new_doc.doc, o);
      r.findings = res.findings;
      r.sections.push_back({"cluster_baseline", reports::baseline::cluster_baseline_to_json(
                                                    res, o, a.baseline, a.inputs[0])});
      table = reports::baseline::cluster_baseline_table_text(res, o);
    } else {
      auto res = reports::baseline::compare_node_baseline(old_doc.doc, new_doc.doc);
      r.findings = res.findings;
      r.sections.push_back({"node_baseline", reports::baseline::node_baseline_to_json(
                                                 res, a.baseline, a.inputs[0])});
      table = reports::baseline::node_baseline_table_text(res);
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string(e.what()) + " (old: " + a.baseline + ", new: " + a.inputs[0] +
                     ")");
  }
  return reports::render_report(r, a.json, std::cout, table);
}

// Without --html/--prom/--baseline: each saved report as the command that made it printed it
// (the same text renderer), e.g. a pair report fetched from a node. Exit: the worst the findings
// imply (0 or 1), as the command's own was. All inputs are parsed before anything is printed.
int print_saved_reports(const std::vector<reports::InputDocument>& docs) {
  std::vector<Report> parsed;
  for (const auto& d : docs) {
    if (d.kind == reports::InputKind::kProfile || d.kind == reports::InputKind::kMetrics)
      throw UsageError(d.path + ": is a " + reports::to_string(d.kind) +
                       "; text rendering reads saved reports (node, pair, cluster, topo, "
                       "nccl-log, validate): give --html FILE for this one");
    try {
      parsed.push_back(report_from_json(d.doc));
    } catch (const std::invalid_argument& e) {
      throw UsageError(d.path + ": " + e.what());
    }
  }
  // Rendered in full before a byte is printed: a section of the wrong shape (a hand-edited
  // file) is a usage error naming the file, not half a report.
  const bool color = reports::color_enabled(::isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR"));
  std::string text;
  int code = kExitClean;
  for (size_t i = 0; i < parsed.size(); ++i) {
    std::ostringstream one;
    try {
      reports::render_text(parsed[i], one, color);
    } catch (const nlohmann::json::exception& e) {
      throw UsageError(docs[i].path + ": a section does not have the documented shape " +
                       "(docs/json/): " + e.what());
    }
    text += (i ? "\n" : "") + one.str();
    code = std::max(code, exit_code_for(parsed[i].findings));
  }
  std::cout << text;
  return code;
}

int run_report(const ReportArgs& a) {
  if (!a.baseline.empty()) {
    if (!a.html.empty() || !a.prom.empty())
      throw UsageError("--baseline is a judgement of its own: run --html/--prom in a second call");
    return run_baseline(a);
  }
  std::vector<reports::InputDocument> docs;
  for (const auto& p : a.inputs) docs.push_back(reports::load_input(p));
  if (a.html.empty() && a.prom.empty()) {
    if (a.json)
      throw UsageError(
          "nothing to do: give --html FILE, --prom FILE or --baseline OLD.json "
          "(the saved --json document is already the JSON)");
    return print_saved_reports(docs);
  }
  // Render everything before writing anything, so a bad input leaves no file behind.
  std::string html, prom;
  if (!a.html.empty()) {
    try {
      html = reports::html::render_html(docs, utc_now_rfc3339());
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  if (!a.prom.empty()) {
    if (docs.size() != 1)
      throw UsageError("--prom writes the figures of one report (a textfile per report): got " +
                       std::to_string(docs.size()) + " inputs");
    const auto& d = docs[0];
    try {
      if (d.kind == reports::InputKind::kPairReport)
        prom = reports::prom::render(reports::prom::pair_families(d.doc));
      else if (d.kind == reports::InputKind::kNodeReport)
        prom = reports::prom::render(reports::prom::node_families(d.doc));
      else if (d.kind == reports::InputKind::kClusterReport)
        prom = reports::prom::render(reports::prom::cluster_families(d.doc));
      else
        throw UsageError(d.path + ": is a " + reports::to_string(d.kind) +
                         "; --prom reads a node, pair or cluster report");
    } catch (const std::invalid_argument& e) {
      throw UsageError(d.path + ": " + e.what());
    }
  }
  // Both paths checked before either file is written: all or nothing.
  if (!a.html.empty()) check_output_path("--html", a.html);
  if (!a.prom.empty()) check_output_path("--prom", a.prom);
  if (!a.html.empty()) write_output_file("--html", a.html, html);
  if (!a.prom.empty()) write_output_file("--prom", a.prom, prom);
  if (a.json)
    std::cout << Json{{"schema_version", kReportSchemaVersion},
                      {"kind", "report"},
                      {"html", a.html.empty() ? Json() : Json(a.html)},
                      {"prom", a.prom.empty() ? Json() : Json(a.prom)}}
                     .dump(2)
              << "\n";
  return kExitClean;
}

}  // namespace

void register_report_command(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ReportArgs>();
  auto* sub = app.add_subcommand("report",
                                 "Render saved JSON (node/pair/cluster reports, profiles, "
                                 "metrics.jsonl) as HTML or Prometheus lines, print saved "
                                 "reports as text (no flag), or compare a pair, node or "
                                 "cluster report with a baseline");
  sub->add_option("inputs", a->inputs, "JSON documents; the kind is read from each document")
      ->required();
  sub->add_option("--html", a->html, "Write one self-contained HTML file (no network needed)");
  sub->add_option("--prom", a->prom,
                  "Write Prometheus textfile lines (node_exporter) of one report");
  sub->add_option("--baseline", a->baseline,
                  "A saved pair, node or cluster report to compare the input with");
  sub->add_option(
         "--regression-pct", a->opts.regression_pct,
         "Fail when busbw (pair) or a pair's bandwidth (cluster) falls more than this many "
         "percent below the baseline (default 10)")
      ->check(CLI::Range(0.0, 100.0));
  sub->add_option(
         "--expect-link-fraction", a->opts.expect_link_fraction,
         "Warn when peak busbw (pair) or a pair's bandwidth (cluster) is below this fraction of "
         "the link rate (default 0.9; 0 = off)")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--rtt-regression-pct", a->cluster_opts.rtt_regression_pct,
                  "Cluster: warn when a pair's median RTT rose more than this many percent (and "
                  "10 us) above the baseline (default 50)")
      ->check(CLI::Range(0.0, 10000.0));
  sub->add_option("--expect-median-pct", a->cluster_opts.expect_median_pct,
                  "Cluster: warn when a pair's bandwidth is more than this many percent below the "
                  "median of the run's pairs (default 25; 0 = off)")
      ->check(CLI::Range(0.0, 100.0));
  sub->add_option("--min-bytes", a->opts.min_bytes,
                  "Judge regressions from this message size up (default 1048576)");
  sub->add_flag("--json", a->json, "Print the baseline result (or what was written) as JSON");
  sub->callback([a, exit_code] {
    *exit_code = run_command("report", a->json, [&] { return run_report(*a); });
  });
}

}  // namespace fabkit::cli
