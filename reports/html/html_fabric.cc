// Pair and cluster sections: busbw vs message size per transport against the link rate, per-size
// latency, and the cluster's host-pair matrix as a heat map.
#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>

#include "reports/chart/svg_chart.h"
#include "reports/html/html_report.h"

namespace fabkit::reports::html {
namespace {

std::string num_or(const std::optional<double>& v, const char* none = "—") {
  return v ? chart::format_number(*v) : none;
}

// The RDM test over libfabric (EFA's path, or --ofi-provider): one paragraph, its figures beside
// the TCP test's on the same pair, as the text report has them.
std::string ofi_rdm_paragraph(const Json& r) {
  if (!r.is_object()) return "";  // reports made before the test existed
  const std::string w = "pair.ofi_rdm";
  std::ostringstream o;
  o << "<p class=\"ofi-rdm\">libfabric RDM point-to-point";
  const std::string provider = opt_string(r, "provider", w);
  if (!provider.empty()) o << " (" << escape(provider) << ")";
  const std::string status = opt_string(r, "status", w);
  if (status != "ran") {
    o << ": " << escape(status) << " — " << escape(opt_string(r, "reason", w)) << "</p>\n";
    return o.str();
  }
  o << ": " << num_or(opt_number(r, "bandwidth_gbps", w)) << " Gbit/s, latency "
    << num_or(opt_number(r, "latency_us", w)) << " µs (8 B, half round trip)";
  if (auto tcp = opt_number(r, "tcp_gbps", w))
    o << "; TCP on the same pair " << num_or(tcp) << " Gbit/s ("
      << num_or(opt_number(r, "ratio_to_tcp", w)) << "×)";
  o << "</p>\n";
  return o.str();
}

}  // namespace

std::string pair_section(const Json& doc) {
  std::ostringstream o;
  o << findings_table(opt_array(doc, "findings", "report"));
  const Json& p = doc.at("pair");
  const Json& transports = opt_array(p, "transports", "pair");
  o << "<h3>Transports</h3>\n<table class=\"transports\"><thead><tr><th>transport</th>"
       "<th>status</th><th>peak busbw (GB/s)</th><th>at</th><th>link rate (Gbit/s)</th>"
       "<th>fraction of link</th><th>reason</th></tr></thead><tbody>\n";
  chart::LineChart latency{"all-reduce time per message size",
                           "message size (bytes)",
                           "time (µs)",
                           true,
                           true,
                           true,
                           {},
                           {},
                           {}};
  std::ostringstream charts;
  for (size_t i = 0; i < transports.size(); ++i) {
    const Json& t = transports[i];
    std::string w = "pair.transports[" + std::to_string(i) + "]";
    std::string name = opt_string(t, "transport", w);
    auto peak = opt_number(t, "peak_busbw_gbps", w);
    auto peak_bytes = opt_number(t, "peak_bytes", w);
    auto rate = opt_number(t, "link_rate_gbit_s", w);
    auto frac = opt_number(t, "link_fraction", w);
    // An unavailable transport carries peak 0: a dash, so it does not read as a measured zero.
    if (opt_string(t, "status", w) != "ok") peak = peak_bytes = frac = std::nullopt;
    o << "<tr><td>" << escape(name) << "</td><td>" << escape(opt_string(t, "status", w))
      << "</td><td class=\"num\">" << num_or(peak) << "</td><td class=\"num\">"
      << (peak_bytes ? iec_bytes(*peak_bytes) : "—") << "</td><td class=\"num\">"
      << num_or(rate, "unknown") << "</td><td class=\"num\">"
      << (frac ? chart::format_number(*frac * 100) + "%" : "—") << "</td><td>"
      << escape(opt_string(t, "reason", w)) << "</td></tr>\n";
    chart::Series bus{name, {}, "", false}, time{name, {}, "", false};
    const Json& sizes = opt_array(t, "sizes", w);
    for (size_t s = 0; s < sizes.size(); ++s) {
      std::string sw = w + ".sizes[" + std::to_string(s) + "]";
      auto bytes = opt_number(sizes[s], "bytes", sw);
      auto bw = opt_number(sizes[s], "busbw_gbps", sw);
      auto us = opt_number(sizes[s], "time_us", sw);
      if (!bytes || *bytes <= 0)
        throw std::invalid_argument(sw + ".bytes must be a positive number");
      if (bw) bus.points.push_back({*bytes, *bw});
      if (us && *us > 0) time.points.push_back({*bytes, *us});
    }
    if (!bus.points.empty()) {
      chart::LineChart c{"busbw vs message size — " + name,
                         "message size (bytes)",
                         "busbw (GB/s)",
                         true,
                         false,
                         true,
                         {bus},
                         {},
                         {}};
      // busbw is in GB/s (1e9 bytes/s, nccl-tests' unit); the link rate in Gbit/s.
      if (rate && *rate > 0) {
        double link = *rate / 8.0;
        c.lines.push_back({"link rate " + chart::format_number(*rate) + " Gbit/s", link});
        c.bands.push_back({"expected " + chart::format_number(kBandLow * 100) + "–" +
                               chart::format_number(kBandHigh * 100) + "% of link",
                           link * kBandLow, link * kBandHigh});
      }
      charts << chart::render_line_chart(c);
    }
    if (!time.points.empty()) latency.series.push_back(time);
  }
  o << "</tbody></table>\n";
  if (transports.empty()) o << "<p>no all-reduce transports were run</p>\n";
  o << "<div class=\"charts busbw\">\n" << charts.str() << "</div>\n";
  // All-reduce time per size; the round-trip histograms of the links follow the links table.
  if (!latency.series.empty())
    o << "<div class=\"charts latency\">\n" << chart::render_line_chart(latency) << "</div>\n";

  const Json& links = opt_array(p, "links", "pair");
  if (!links.empty()) {
    o << "<h3>Interface pairs (TCP)</h3>\n<table class=\"links\"><thead><tr><th>A</th><th>B</th>"
         "<th>status</th><th>RTT median / p99 (µs)</th><th>single / multi stream (Gbit/s)</th>"
         "<th>link rate (Gbit/s)</th></tr></thead><tbody>\n";
    for (size_t i = 0; i < links.size(); ++i) {
      const Json& l = links[i];
      std::string w = "pair.links[" + std::to_string(i) + "]";
      auto side = [&](const char* k) {
        const Json& s = l.value(k, Json::object());
        return opt_string(s, "ifname", w + "." + k) + " " + opt_string(s, "addr", w + "." + k);
      };
      o << "<tr" << (l.value("chosen", false) ? " class=\"chosen\"" : "") << "><td>"
        << escape(side("a")) << "</td><td>" << escape(side("b")) << "</td><td>"
        << escape(opt_string(l, "status", w)) << (l.value("chosen", false) ? " (chosen)" : "")
        << "</td><td class=\"num\">" << num_or(opt_number(l, "rtt_median_us", w)) << " / "
        << num_or(opt_number(l, "rtt_p99_us", w)) << "</td><td class=\"num\">"
        << num_or(opt_number(l, "single_stream_gbit_s", w)) << " / "
        << num_or(opt_number(l, "multi_stream_gbit_s", w)) << "</td><td class=\"num\">"
        << num_or(opt_number(l, "link_rate_gbit_s", w), "unknown") << "</td></tr>\n";
    }
    o << "</tbody></table>\n";
  }
  o << pair_latency(links);
  const Json& rc = p.value("rdma_rc", Json::object());
  const Json& rc_pairs = opt_array(rc, "pairs", "pair.rdma_rc");
  if (!rc_pairs.empty()) {
    // bw_gbps here is Gbit/s (ib_write_bw's unit), directly comparable with the port rate.
    o << "<h3>RDMA RC per rail</h3>\n<table class=\"rdma-rc\"><thead><tr><th>rail</th><th>A</th>"
         "<th>B</th><th>link layer</th><th>status</th><th>write bw (Gbit/s)</th>"
         "<th>port rate (Gbit/s)</th><th>fraction</th><th>send latency median / p99 (µs)</th>"
         "</tr></thead><tbody>\n";
    for (size_t i = 0; i < rc_pairs.size(); ++i) {
      const Json& q = rc_pairs[i];
      std::string w = "pair.rdma_rc.pairs[" + std::to_string(i) + "]";
      auto end = [&](const char* k) {
        const Json& e = q.value(k, Json::object());
        auto port = opt_number(e, "port", w + "." + k);
        return opt_string(e, "hca", w + "." + k) + ":" + num_or(port, "?");
      };
      auto bw = opt_number(q, "bw_gbps", w);
      auto rate = opt_number(q, "rate_gbps", w);
      o << "<tr><td>" << escape(opt_string(q, "rail", w)) << "</td><td>" << escape(end("a"))
        << "</td><td>" << escape(end("b")) << "</td><td>" << escape(opt_string(q, "link_layer", w))
        << "</td><td>" << escape(opt_string(q, "status", w)) << "</td><td class=\"num\">"
        << num_or(bw) << "</td><td class=\"num\">" << num_or(rate, "unknown")
        << "</td><td class=\"num\">"
        << (bw && rate && *rate > 0 ? chart::format_number(*bw / *rate * 100) + "%" : "—")
        << "</td><td class=\"num\">" << num_or(opt_number(q, "lat_us_median", w)) << " / "
        << num_or(opt_number(q, "lat_us_p99", w)) << "</td></tr>\n";
    }
    o << "</tbody></table>\n" << rc_latency(rc_pairs);
  } else if (!opt_string(rc, "status", "pair.rdma_rc").empty()) {
    o << "<p class=\"rdma-rc\">RDMA RC test: " << escape(opt_string(rc, "status", "pair.rdma_rc"))
      << (rc.value("reason", Json()).is_string() ? " — " + escape(rc["reason"].get<std::string>())
                                                 : "")
      << "</p>\n";
  }
  o << ofi_rdm_paragraph(p.value("ofi_rdm", Json()));
  return o.str();
}

std::string cluster_section(const Json& doc) {
  std::ostringstream o;
  o << findings_table(opt_array(doc, "findings", "report"));
  const Json& c = doc.at("cluster");
  std::vector<std::string> hosts;
  for (const auto& h : opt_array(c, "hosts", "cluster")) {
    if (!h.is_string()) throw std::invalid_argument("cluster.hosts[] must hold strings");
    hosts.push_back(h.get<std::string>());
  }
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < hosts.size(); ++i) index[hosts[i]] = i;
  const Json& m = c.value("matrix", Json::object());
  const Json& pairs = opt_array(m, "pairs", "cluster.matrix");
  // Symmetric: a pair run measures one link, drawn in both cells.
  // 44 px cells up to 16 hosts, then smaller so 64 hosts still fit a screen (~900 px).
  int cell = hosts.size() <= 16 ? 44 : std::max(12, static_cast<int>(900 / hosts.size()));
  chart::HeatMap h{"bandwidth per host pair", "Gbit/s", hosts, hosts, {}, cell};
  h.values.assign(hosts.size() * hosts.size(), std::nullopt);
  for (size_t i = 0; i < pairs.size(); ++i) {
    std::string w = "cluster.matrix.pairs[" + std::to_string(i) + "]";
    std::string a = opt_string(pairs[i], "a", w), b = opt_string(pairs[i], "b", w);
    if (!index.count(a) || !index.count(b))
      throw std::invalid_argument(w + ": host '" + (index.count(a) ? b : a) +
                                  "' is not in cluster.hosts");
    auto v = opt_number(pairs[i], "gbit_s", w);
    if (!pairs[i].value("ok", true) && !v) v = 0.0;  // a failed pair is the worst cell, not a gap
    h.values[index[a] * hosts.size() + index[b]] = v;
    h.values[index[b] * hosts.size() + index[a]] = v;
  }
  if (hosts.empty())
    o << "<p>no hosts</p>\n";
  else
    o << "<div class=\"charts matrix\">\n" << chart::render_heat_map(h) << "</div>\n";
  auto ref = opt_number(m, "reference_gbit_s", "cluster.matrix");
  o << "<p>reference (median node score): " << num_or(ref, "unknown") << " Gbit/s</p>\n";
  o << cluster_latency(pairs);
  return o.str();
}

}  // namespace fabkit::reports::html
