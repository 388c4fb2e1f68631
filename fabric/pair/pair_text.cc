#include "fabric/pair/pair_text.h"

#include <cstdio>

#include "reports/report_render.h"

namespace fabkit::pair {
namespace {

std::string num(const Json& j, int digits = 1) {
  if (!j.is_number()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, j.get<double>());
  return buf;
}

std::string line(const char* fmt, const std::string& a, const std::string& b, const std::string& c,
                 const std::string& d, const std::string& e, const std::string& g) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, a.c_str(), b.c_str(), c.c_str(), d.c_str(), e.c_str(), g.c_str());
  return buf;
}

}  // namespace

void render_pair_text(const Report& r, std::ostream& out) {
  const Json* p = nullptr;
  for (const auto& s : r.sections)
    if (s.name == "pair") p = &s.facts;
  if (p != nullptr) {
    const Json& s = *p;
    out << "pair " << s["hosts"]["a"].get<std::string>() << " <-> " << s["hosts"]["b"].get<std::string>()
        << " (launcher: " << s.value("launcher", "") << ")\n\n";
    const char* fmt = "  %-34s %-11s %10s %10s %12s %12s\n";
    out << "links (A -> B)\n"
        << line(fmt, "interfaces", "status", "rtt_p50_us", "rtt_p99_us", "1stream_Gb/s", "Nstream_Gb/s");
    for (const auto& l : s["links"]) {
      std::string name = l["a"]["ifname"].get<std::string>() + "->" + l["b"]["ifname"].get<std::string>() +
                         " " + l["b"]["addr"].get<std::string>() + (l.value("chosen", false) ? " *" : "");
      out << line(fmt, name, l["status"].get<std::string>(), num(l["rtt_median_us"]), num(l["rtt_p99_us"]),
                  num(l["single_stream_gbit_s"], 2), num(l["multi_stream_gbit_s"], 2));
    }
    const Json& rv = s["rendezvous"];
    if (rv.is_object())
      out << "\nrendezvous port " << rv["port"] << " on " << rv["listen_addr"].get<std::string>() << ": "
          << (rv["status"].is_string() ? rv["status"].get<std::string>() : rv["listen_status"].get<std::string>())
          << "\n";
    if (!s["transports"].empty()) {
      out << "\nall-reduce transports (ranked by peak busbw; GB/s = 1e9 B/s)\n";
      const char* tf = "  %-16s %-12s %14s %12s %14s %10s\n";
      out << line(tf, "transport", "status", "peak_busbw", "at_bytes", "link_fraction", "vs_raw");
      for (const auto& t : s["transports"])
        out << line(tf, t["transport"].get<std::string>(), t["status"].get<std::string>(),
                    num(t.value("peak_busbw_gbps", Json()), 3), t.value("peak_bytes", Json(0)).dump(),
                    t["link_fraction"].is_null() ? "unknown" : num(t["link_fraction"], 2),
                    num(t.value("vs_raw_exchange", Json()), 2));
    }
    const Json& rc = s.value("rdma_rc", Json());
    if (rc.is_object()) {
      if (rc.value("status", "") != "ran") {
        out << "\nRDMA RC point-to-point: " << rc.value("status", "") << ": "
            << (rc["reason"].is_string() ? rc["reason"].get<std::string>() : "") << "\n";
      } else {
        out << "\nRDMA RC point-to-point (write_bw 64 KiB, send_lat 2 B; Gbit/s = 1e9 bit/s)\n";
        const char* rf = "  %-28s %-8s %10s %10s %10s %8s\n";
        out << line(rf, "ports (A <-> B)", "status", "bw_Gb/s", "lat_p50_us", "lat_p99_us", "mtu");
        for (const auto& p2 : rc["pairs"])
          out << line(rf, p2["a"]["hca"].get<std::string>() + ":" + p2["a"]["port"].dump() + "<->" +
                              p2["b"]["hca"].get<std::string>() + ":" + p2["b"]["port"].dump(),
                      p2["status"].get<std::string>(), num(p2["bw_gbps"], 2), num(p2["lat_us_median"], 2),
                      num(p2["lat_us_p99"], 2), p2["path_mtu"].is_null() ? "-" : p2["path_mtu"].dump());
      }
    }
    const Json& rec = s["recommended"];
    out << "\nrecommended: transport " << (rec["transport"].is_string() ? rec["transport"].get<std::string>() : "none")
        << ", interface " << (rec["interface_a"].is_string() ? rec["interface_a"].get<std::string>() : "none")
        << " / " << (rec["interface_b"].is_string() ? rec["interface_b"].get<std::string>() : "none") << "\n";
  }
  reports::render_text(r, out);
}

}  // namespace fabkit::pair
