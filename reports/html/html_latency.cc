// Round-trip latency histograms: per measured interface pair of a pair report (the chosen one
// first), and for a cluster report all pairs' chosen links merged, with each pair's median listed.
// The histograms are the agents' own (common/latency_histogram.h, docs/json/pair.md), checked again
// here since a report file is input like any other.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "common/latency_histogram.h"
#include "reports/chart/svg_histogram.h"
#include "reports/html/html_report.h"

namespace fabkit::reports::html {
namespace {

constexpr const char* kNoSamples =
    "<p class=\"no-latency\">no latency samples in this report</p>\n";

// The sample count a histogram must hold, when the document states it (a non-negative integer).
int64_t stated_count(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_number_integer() && j[key].get<int64_t>() >= 0
             ? j[key].get<int64_t>()
             : -1;
}

chart::Histogram rtt_chart(const std::string& title, const LatencyHistogram& h) {
  chart::Histogram c;
  c.title = title;
  c.bars = chart::latency_bars(h);
  c.overflow = h.count(LatencyHistogram::kOverflowBucket);
  return c;
}

// A percentile known only by its bucket: marked at the bucket's geometric middle, named with the
// bucket's range so nobody reads more precision into it than there is.
chart::HistogramMark bucket_mark(const LatencyHistogram& h, double p, const char* name,
                                 const char* color, bool dashed) {
  int b = h.percentile_bucket(p);
  if (b == LatencyHistogram::kOverflowBucket) b = LatencyHistogram::kOverflowBucket - 1;
  double lo = LatencyHistogram::lower_edge(b), hi = LatencyHistogram::lower_edge(b + 1);
  double mid = lo > 0 ? std::sqrt(lo * hi) : hi / 2;
  return {std::string(name) + " in " + chart::format_number(lo) + "–" + chart::format_number(hi) +
              " µs",
          mid, color, dashed};
}

}  // namespace

std::string pair_latency(const Json& links) {
  std::vector<size_t> order;  // the chosen link first, then the rest as measured
  for (size_t i = 0; i < links.size(); ++i)
    if (links[i].value("chosen", false))
      order.insert(order.begin(), i);
    else
      order.push_back(i);
  std::ostringstream charts;
  for (size_t i : order) {
    const Json& l = links[i];
    std::string w = "pair.links[" + std::to_string(i) + "]";
    if (!l.contains("rtt_histogram") || l["rtt_histogram"].is_null()) continue;
    LatencyHistogram h =
        histogram_from_json(l["rtt_histogram"], w + ".rtt_histogram", stated_count(l, "pings"));
    if (h.total() == 0) continue;
    auto side = [&](const char* k) {
      const Json& s = l.value(k, Json::object());
      return opt_string(s, "ifname", w + "." + k) + " " + opt_string(s, "addr", w + "." + k);
    };
    chart::Histogram c = rtt_chart("round trip " + side("a") + " → " + side("b") +
                                       (l.value("chosen", false) ? " (chosen)" : ""),
                                   h);
    // The exact nearest-rank figures the agent computed from its samples, not bucket estimates.
    if (auto med = opt_number(l, "rtt_median_us", w))
      c.marks.push_back({"median " + chart::format_number(*med) + " µs", *med, "#c0392b", false});
    if (auto p99 = opt_number(l, "rtt_p99_us", w))
      c.marks.push_back({"p99 " + chart::format_number(*p99) + " µs", *p99, "#e67e22", true});
    charts << chart::render_histogram(c);
  }
  std::string drawn = charts.str();
  return "<h3>Round-trip latency (TCP, 64-byte ping-pong)</h3>\n" +
         (drawn.empty() ? std::string(kNoSamples)
                        : "<div class=\"charts rtt\">\n" + drawn + "</div>\n");
}

std::string rc_latency(const Json& rc_pairs) {
  std::ostringstream charts;
  for (size_t i = 0; i < rc_pairs.size(); ++i) {
    const Json& q = rc_pairs[i];
    std::string w = "pair.rdma_rc.pairs[" + std::to_string(i) + "]";
    if (!q.contains("lat_histogram") || q["lat_histogram"].is_null()) continue;
    LatencyHistogram h = histogram_from_json(q["lat_histogram"], w + ".lat_histogram");
    if (h.total() == 0) continue;
    auto end = [&](const char* k) {
      const Json& e = q.value(k, Json::object());
      auto port = opt_number(e, "port", w + "." + k);
      return opt_string(e, "hca", w + "." + k) + ":" + (port ? chart::format_number(*port) : "?");
    };
    chart::Histogram c = rtt_chart("RDMA SEND latency, rail " + opt_string(q, "rail", w) + " (" +
                                       end("a") + " → " + end("b") + ")",
                                   h);
    c.x_label = "one-way latency (µs, half the round trip)";
    if (auto med = opt_number(q, "lat_us_median", w))
      c.marks.push_back({"median " + chart::format_number(*med) + " µs", *med, "#c0392b", false});
    if (auto p99 = opt_number(q, "lat_us_p99", w))
      c.marks.push_back({"p99 " + chart::format_number(*p99) + " µs", *p99, "#e67e22", true});
    charts << chart::render_histogram(c);
  }
  std::string drawn = charts.str();
  return drawn.empty() ? "<p class=\"no-latency\">no RDMA send-latency samples in this report</p>\n"
                       : "<div class=\"charts rdma-latency\">\n" + drawn + "</div>\n";
}

std::string cluster_latency(const Json& pairs) {
  LatencyHistogram merged;
  struct Row {
    std::string a, b, link;
    std::optional<double> median;
    uint64_t samples = 0;
  };
  std::vector<Row> rows;
  size_t with_histogram = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Json& p = pairs[i];
    std::string w = "cluster.matrix.pairs[" + std::to_string(i) + "]";
    Row r{opt_string(p, "a", w), opt_string(p, "b", w), "", opt_number(p, "rtt_us", w), 0};
    const Json& link = p.value("link", Json());
    if (link.is_object())
      r.link = opt_string(link, "ifname_a", w + ".link") + " → " +
               opt_string(link, "ifname_b", w + ".link");
    if (p.contains("rtt_histogram") && !p["rtt_histogram"].is_null()) {
      LatencyHistogram h = histogram_from_json(p["rtt_histogram"], w + ".rtt_histogram");
      r.samples = h.total();
      merged.merge(h);
      ++with_histogram;
    }
    if (r.median || r.samples) rows.push_back(r);
  }
  std::ostringstream o;
  o << "<h3>Round-trip latency of each pair's chosen link</h3>\n";
  if (merged.total() == 0) {
    o << kNoSamples;
  } else {
    chart::Histogram c = rtt_chart(
        "round trip, chosen links of " + std::to_string(with_histogram) + " pairs merged", merged);
    c.marks.push_back(bucket_mark(merged, 0.5, "median", "#c0392b", false));
    c.marks.push_back(bucket_mark(merged, 0.99, "p99", "#e67e22", true));
    o << "<div class=\"charts rtt\">\n" << chart::render_histogram(c) << "</div>\n";
  }
  if (!rows.empty()) {
    // Slowest first: the pair worth a look is at the top.
    std::stable_sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) {
      return x.median.value_or(-1) > y.median.value_or(-1);
    });
    o << "<table class=\"rtt-pairs\"><thead><tr><th>A</th><th>B</th><th>chosen link</th>"
         "<th>median RTT (µs)</th><th>samples</th></tr></thead><tbody>\n";
    for (const auto& r : rows)
      o << "<tr><td>" << escape(r.a) << "</td><td>" << escape(r.b) << "</td><td>" << escape(r.link)
        << "</td><td class=\"num\">" << (r.median ? chart::format_number(*r.median) : "—")
        << "</td><td class=\"num\">" << (r.samples ? std::to_string(r.samples) : "—")
        << "</td></tr>\n";
    o << "</tbody></table>\n";
  }
  return o.str();
}

}  // namespace fabkit::reports::html
