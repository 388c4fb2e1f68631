// Text of the "pair" section (2 hosts) and the "pair_group" section (3 or more): the links
// table, the rendezvous check, the transport ranking, the RDMA RC rails, the recommendation.
#include <cstdio>

#include "reports/text/table.h"
#include "reports/text/terminal_safe.h"
#include "reports/text/text_parts.h"

namespace fabkit::reports::text {
namespace {

std::string link_name(const Json& l) {
  return str(member(member(l, "a"), "ifname")) + "->" + str(member(member(l, "b"), "ifname")) +
         " " + str(member(member(l, "b"), "addr")) + (l.value("chosen", false) ? " *" : "");
}

std::string port_pair(const Json& p) {
  return str(member(member(p, "a"), "hca")) + ":" + member(member(p, "a"), "port").dump() + "<->" +
         str(member(member(p, "b"), "hca")) + ":" + member(member(p, "b"), "port").dump();
}

void render_rdma_rc(const Json& rc, std::ostream& out, const Style& style) {
  if (!rc.is_object()) return;
  if (rc.value("status", "") != "ran") {
    out << "\nRDMA RC point-to-point: " << rc.value("status", "") << ": "
        << str(member(rc, "reason"), "") << "\n";
    return;
  }
  const Json& plan = member(rc, "plan");
  const Json& bw = member(plan, "write_bw");
  const Json& lat = member(plan, "send_lat");
  out << "\nRDMA RC point-to-point (write_bw " << member(bw, "iters").dump() << " x "
      << member(bw, "size_bytes").dump() << " B, send_lat " << member(lat, "iters").dump() << " x "
      << member(lat, "size_bytes").dump() << " B; Gbit/s = 1e9 bit/s)\n";
  Table t({{"ports (A <-> B)"},
           {"status"},
           {"bw_Gb/s", Align::kRight},
           {"lat_p50_us", Align::kRight},
           {"lat_p99_us", Align::kRight},
           {"mtu", Align::kRight}});
  for (const auto& p : member(rc, "pairs")) {
    const std::string status = str(member(p, "status"));
    t.add_row({port_pair(p), status == "ok" ? status : style.bad(status),
               fixed(member(p, "bw_gbps"), 2), fixed(member(p, "lat_us_median"), 2),
               fixed(member(p, "lat_us_p99"), 2),
               member(p, "path_mtu").is_null() ? "-" : member(p, "path_mtu").dump()});
  }
  t.render(out);
}

// The RDM test over libfabric: one line, its figures beside the TCP test's on the same pair.
void render_ofi_rdm(const Json& r, std::ostream& out) {
  if (!r.is_object()) return;  // reports made before the test existed
  const std::string status = r.value("status", "");
  out << "\nlibfabric RDM point-to-point";
  if (member(r, "provider").is_string()) out << " (" << str(member(r, "provider")) << ")";
  if (status != "ran") {
    out << ": " << status << ": " << str(member(r, "reason"), "") << "\n";
    return;
  }
  const Json& plan = member(r, "plan");
  out << ": " << fixed(member(r, "bandwidth_gbps"), 2) << " Gbit/s ("
      << member(plan, "bw_messages").dump() << " x " << member(plan, "bw_size_bytes").dump()
      << " B), latency " << fixed(member(r, "latency_us"), 2) << " us (8 B, half round trip)";
  if (member(r, "tcp_gbps").is_number())
    out << "; TCP on the same pair " << fixed(member(r, "tcp_gbps"), 2) << " Gbit/s ("
        << fixed(member(r, "ratio_to_tcp"), 2) << "x)";
  out << "\n";
}

// The steps that did not complete: a failed one is also a finding; a skipped one says which
// failure kept it from running, so an operator sees what the report lacks and why.
void render_incomplete_steps(const Json& steps, std::ostream& out, const Style& style) {
  Table t({{"step"}, {"host"}, {"status"}, {"why"}});
  for (const auto& s : steps) {
    const std::string status = str(member(s, "status"));
    if (status == "ok" || str(member(s, "step")) == "bye") continue;
    t.add_row({str(member(s, "step")), str(member(s, "host")),
               status == "failed" ? style.bad(status) : style.warn(status),
               status == "failed" ? "finding " + str(member(s, "code")) + " below"
                                  : str(member(s, "error"), "")});
  }
  if (t.empty()) return;
  out << "\nsteps that did not complete\n";
  t.render(out);
}

}  // namespace

void render_pair_section(const Json& s, std::ostream& out, const Style& style) {
  out << "pair " << str(member(member(s, "hosts"), "a")) << " <-> "
      << str(member(member(s, "hosts"), "b")) << " (launcher: " << s.value("launcher", "")
      << ")\n\nlinks (A -> B; * chosen)\n";
  Table links({{"interfaces"},
               {"status"},
               {"rtt_p50_us", Align::kRight},
               {"rtt_p99_us", Align::kRight},
               {"1stream_Gb/s", Align::kRight},
               {"Nstream_Gb/s", Align::kRight}});
  for (const auto& l : member(s, "links")) {
    const std::string status = str(member(l, "status"));
    links.add_row({link_name(l), status == "open" ? status : style.bad(status),
                   fixed(member(l, "rtt_median_us"), 1), fixed(member(l, "rtt_p99_us"), 1),
                   fixed(member(l, "single_stream_gbit_s"), 2),
                   fixed(member(l, "multi_stream_gbit_s"), 2)});
  }
  links.render(out);

  const Json& rv = member(s, "rendezvous");
  if (rv.is_object())
    out << "\nrendezvous port " << member(rv, "port") << " on " << str(member(rv, "listen_addr"))
        << ": "
        << (member(rv, "status").is_string() ? str(member(rv, "status"))
                                             : str(member(rv, "listen_status")))
        << "\n";

  if (!member(s, "transports").empty()) {
    out << "\nall-reduce transports (ranked by peak busbw; GB/s = 1e9 B/s)\n";
    Table t({{"transport"},
             {"via"},
             {"status"},
             {"peak_busbw_GB/s", Align::kRight},
             {"at_bytes", Align::kRight},
             {"link_fraction", Align::kRight},
             {"vs_raw", Align::kRight}});
    for (const auto& tr : member(s, "transports")) {
      const std::string status = str(member(tr, "status"));
      // A transport that measured nothing (unavailable, or failed before its first size) has
      // no peak: "-", not the 0 its ranking entry carries.
      const bool measured =
          tr.contains("sizes") && member(tr, "sizes").is_array() && !member(tr, "sizes").empty();
      t.add_row({str(member(tr, "transport")), str(member(tr, "via"), "-"),
                 status == "ok"            ? status
                 : status == "unavailable" ? style.note(status)
                                           : style.warn(status),
                 measured ? fixed(tr.value("peak_busbw_gbps", Json()), 3) : "-",
                 measured ? tr.value("peak_bytes", Json(0)).dump() : "-",
                 !measured                               ? "-"
                 : member(tr, "link_fraction").is_null() ? "unknown"
                                                         : fixed(member(tr, "link_fraction"), 2),
                 fixed(tr.value("vs_raw_exchange", Json()), 2)});
    }
    t.render(out);
    // The NCCL rows: the network NCCL said it used and the net plugin that carried it.
    for (const auto& tr : member(s, "transports")) {
      const Json& net = member(tr, "net");
      if (!net.is_object()) continue;
      // The names and the path come from the NCCL log of each node: shown, never obeyed.
      out << "NCCL net (" << terminal_safe(str(member(tr, "transport"))) << "): "
          << terminal_safe(str(member(net, "name"), "unknown")) << ", plugin "
          << terminal_safe(str(member(net, "plugin"), "none"));
      if (member(net, "plugin_version").is_string())
        out << " " << terminal_safe(str(member(net, "plugin_version")));
      out << "\n";
    }
    // Which row is the RDMA one and why (reports made before it was recorded have none).
    const Json& rdma = member(s, "rdma_allreduce");
    if (rdma.is_object())
      out << "RDMA row: " << (member(rdma, "transport").is_string() ? "" : "none: ")
          << str(member(rdma, "reason"), "") << "\n";
  }
  render_rdma_rc(s.value("rdma_rc", Json()), out, style);
  render_ofi_rdm(s.value("ofi_rdm", Json()), out);
  render_incomplete_steps(member(s, "steps"), out, style);

  const Json& rec = member(s, "recommended");
  out << "\nrecommended: transport " << str(member(rec, "transport"), "none") << ", interface "
      << str(member(rec, "interface_a"), "none") << " / " << str(member(rec, "interface_b"), "none")
      << "\n";
}

void render_pair_group_section(const Json& s, std::ostream& out, const Style& style) {
  out << "pair group of " << member(s, "hosts").size()
      << " hosts (launcher: " << s.value("launcher", "")
      << ")\n\nneighbour links (chosen interface pairs)\n";
  Table links(
      {{"from"}, {"to"}, {"via"}, {"rtt_p50_us", Align::kRight}, {"1stream_Gb/s", Align::kRight}});
  for (const auto& p : member(s, "probed_pairs"))
    for (const auto& l : member(p, "links"))
      if (l.value("chosen", false))
        links.add_row({str(member(p, "a")), str(member(p, "b")),
                       str(member(member(l, "b"), "addr")), fixed(member(l, "rtt_median_us"), 1),
                       fixed(member(l, "single_stream_gbit_s"), 2)});
  links.render(out);
  for (const auto& ring : member(s, "rings")) {
    std::string order;
    for (const auto& h : member(ring, "order")) order += (order.empty() ? "" : " -> ") + str(h);
    out << "\nring " << order << " (busbw = algbw * 2(n-1)/n; GB/s = 1e9 B/s)\n";
    Table t({{"transport"},
             {"status"},
             {"peak_busbw_GB/s", Align::kRight},
             {"at_bytes", Align::kRight},
             {"results"}});
    for (const auto& tr : member(ring, "transports")) {
      const bool ok = member(tr, "status") == "ok";
      const bool exact = tr.value("all_correct", false);
      t.add_row({str(member(tr, "transport")), ok ? "ok" : style.warn(str(member(tr, "status"))),
                 fixed(member(tr, "peak_busbw_gbps"), 3), member(tr, "peak_bytes").dump(),
                 !ok     ? "-"
                 : exact ? "exact"
                         : style.bad("WRONG")});
    }
    t.render(out);
  }
  render_incomplete_steps(member(s, "steps"), out, style);
}

}  // namespace fabkit::reports::text
