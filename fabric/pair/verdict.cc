#include "fabric/pair/verdict.h"

#include "fabric/pair/answer_field.h"
#include "fabric/pair/ofi_rdm_step.h"
#include "fabric/pair/rdma_rc_plan.h"
#include "fabric/pair/transport_plan.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace fabkit::pair {
namespace {

std::optional<int64_t> opt_int(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::string fmt(double v, int digits = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string link_name(const LinkResult& l) {
  return l.a.ifname + "(" + l.a.addr + ")->" + l.b.ifname + "(" + l.b.addr + ")";
}


}  // namespace

std::vector<Candidate> candidates_from_interfaces(const Json& interfaces) {
  std::vector<Candidate> out;
  if (!interfaces.is_array())
    throw std::invalid_argument("field 'interfaces' is " + interfaces.dump().substr(0, 64) +
                                ", not a list");
  for (size_t n = 0; n < interfaces.size(); ++n) {
    const Json& i = interfaces[n];
    const std::string at = "interfaces[" + std::to_string(n) + "]";
    try {
      if (!answer_field(i, "up", false) || !answer_field(i, "running", false)) continue;
      std::string kind = answer_field(i, "kind", std::string("other"));
      if (kind == "loopback") continue;
      const Json addresses = answer_field(i, "addresses", Json::array());
      if (!addresses.is_array()) throw std::invalid_argument("field 'addresses' is not a list");
      for (size_t k = 0; k < addresses.size(); ++k) {
        const Json& a = addresses[k];
        try {
          if (answer_field(a, "family", std::string()) != "ipv4") continue;
          Candidate c;
          c.ifname = answer_field(i, "name", std::string());
          c.addr = answer_field(a, "address", std::string());
          c.prefix_len = static_cast<int>(opt_int(a, "prefix_len").value_or(0));
          c.mtu = opt_int(i, "mtu");
          c.speed_mbps = opt_int(i, "speed_mbps");
          c.kind = kind;
          if (!c.ifname.empty() && !c.addr.empty()) out.push_back(c);
        } catch (const std::invalid_argument& e) {
          throw std::invalid_argument("addresses[" + std::to_string(k) + "]: " + e.what());
        }
      }
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(at + ": " + e.what());
    }
  }
  return out;
}

std::optional<size_t> choose_link(const std::vector<LinkResult>& links) {
  std::optional<size_t> best;
  for (size_t i = 0; i < links.size(); ++i) {
    if (links[i].status != "open") continue;
    if (!best) {
      best = i;
      continue;
    }
    const auto& b = links[*best];
    const auto& c = links[i];
    if (c.single_stream_gbit_s > b.single_stream_gbit_s ||
        (c.single_stream_gbit_s == b.single_stream_gbit_s && c.rtt_median_us < b.rtt_median_us))
      best = i;
  }
  return best;
}

std::optional<double> link_rate_gbit_s(const Candidate& a, const Candidate& b) {
  if (!a.speed_mbps || !b.speed_mbps || *a.speed_mbps <= 0 || *b.speed_mbps <= 0) return std::nullopt;
  return static_cast<double>(std::min(*a.speed_mbps, *b.speed_mbps)) / 1000.0;
}

double link_fraction(double busbw_gbps, double rate_gbit_s) {
  return rate_gbit_s > 0 ? busbw_gbps * 8.0 / rate_gbit_s : 0.0;
}

Verdict compute_verdict(const PairFacts& f) {
  Verdict v;
  v.link = f.chosen_link ? f.chosen_link : choose_link(f.links);
  std::optional<double> iface_rate;
  if (v.link) iface_rate = link_rate_gbit_s(f.links[*v.link].a, f.links[*v.link].b);

  std::map<uint64_t, double> raw_busbw;  // size -> raw exchange busbw
  for (const auto& t : f.transports)
    if (t.transport == kRawExchange && t.status == "ok")
      for (const auto& s : t.sizes) raw_busbw[s.bytes] = s.busbw_gbps;

  for (const auto& t : f.transports) {
    RankedTransport r;
    r.transport = t.transport;
    r.status = t.status;
    r.all_correct = !t.sizes.empty();
    for (const auto& s : t.sizes) {
      r.all_correct = r.all_correct && s.correct;
      if (s.busbw_gbps > r.peak_busbw_gbps) {
        r.peak_busbw_gbps = s.busbw_gbps;
        r.peak_bytes = s.bytes;
      }
    }
    if (is_rdma_transport(t.transport)) {
      // The rate of the port pair this transport ran on (the slower of the two ports).
      const TransportPlan tp = plan_transport(t.transport, f.a, f.b);
      if (tp.runnable && tp.extra_a.value("rate_gbps", Json()).is_number())
        r.link_rate_gbit_s = tp.extra_a["rate_gbps"].get<double>();
    } else {
      r.link_rate_gbit_s = iface_rate;
    }
    if (r.link_rate_gbit_s && r.peak_busbw_gbps > 0)
      r.link_fraction = link_fraction(r.peak_busbw_gbps, *r.link_rate_gbit_s);
    auto raw = raw_busbw.find(r.peak_bytes);
    if (t.transport != kRawExchange && raw != raw_busbw.end() && raw->second > 0)
      r.vs_raw_exchange = r.peak_busbw_gbps / raw->second;
    r.via = transport_via(f, t.transport, v.link);
    v.ranking.push_back(r);
  }
  // Usable first (ok and every size correct), by peak busbw; the rest keep their order.
  std::stable_sort(v.ranking.begin(), v.ranking.end(), [](const RankedTransport& x, const RankedTransport& y) {
    bool ux = x.status == "ok" && x.all_correct, uy = y.status == "ok" && y.all_correct;
    if (ux != uy) return ux;
    return ux && x.peak_busbw_gbps > y.peak_busbw_gbps;
  });
  for (const auto& r : v.ranking) {
    if (r.status == "ok" && r.all_correct && r.transport != kRawExchange) {
      v.transport = r.transport;
      v.reason = r.transport + " reached the highest peak busbw (" + fmt(r.peak_busbw_gbps, 3) +
                 " GB/s at " + std::to_string(r.peak_bytes) + " B) with correct results";
      break;
    }
  }
  if (!v.transport)
    v.reason = f.transports.empty() ? "no all-reduce transport was measured"
                                    : "no all-reduce transport completed with correct results";
  if (v.link) v.reason = "interface pair " + link_name(f.links[*v.link]) + "; " + v.reason;
  v.rdma = choose_rdma_row(f, v.link);
  return v;
}

std::vector<Finding> refused_address_findings(const std::vector<RefusedAddress>& refused) {
  std::vector<Finding> out;
  for (const auto& r : refused)
    out.push_back(info(
        "pair.peer_address_refused", r.host + ":" + r.ifname + " " + r.addr,
        r.host + " reported " + r.addr + " on " + r.ifname + ", which " +
            (r.receiver.empty() ? std::string("no agent") : r.receiver) +
            " will contact: " + r.reason +
            ". Agents contact only addresses the controller vouches for, so the pairs with it "
            "are not measured",
        "nothing to do for an interface training must not use; for a routed data network, name "
        "the hosts by names that resolve to their data addresses (the controller vouches for "
        "what it resolves itself)"));
  return out;
}

std::optional<Finding> crashed_runner_finding(const TransportResult& t,
                                              const std::vector<std::string>& hosts) {
  std::string hosts_hit, why;
  for (size_t i = 0; i < t.ranks.size(); ++i) {
    const Json& doc = t.ranks[i];
    if (!doc.is_object() || !doc.contains("extra") || !doc["extra"].is_object() ||
        doc["extra"].value("error", Json()) != "runner_crashed")
      continue;
    const std::string host = i < hosts.size() ? hosts[i] : "rank " + std::to_string(i);
    hosts_hit += (hosts_hit.empty() ? "" : ", ") + host;
    const Json reason = doc.value("reason", Json());
    if (why.empty() && reason.is_string()) why = host + ": " + reason.get<std::string>();
  }
  if (hosts_hit.empty()) return std::nullopt;
  return fail("pair.transport_crashed", t.transport + " on " + hosts_hit,
              "the " + t.transport +
                  " runner crashed in the agent's child process (the agent and the other "
                  "measurements went on): " +
                  why,
              "do not train over " + t.transport +
                  " as it is: a job would die the same way; its last stderr lines above name the "
                  "library that failed (docs/findings/pair.md#pairtransport_crashed); use the "
                  "transport the report recommends meanwhile");
}

std::vector<Finding> judge_pair(const PairFacts& f, const Verdict& v) {
  std::vector<Finding> out;
  bool aborted = false;
  for (const auto& s : f.steps) {
    if (s.status != "failed" || s.code.empty()) continue;
    aborted = aborted || s.code == "pair.launch_failed" || s.code == "pair.agent_unreachable" ||
              s.code == "pair.agent_rejected" || s.code == "pair.agent_impostor" ||
              s.code == "pair.agent_lost" || s.code == "pair.agent_timeout" ||
              s.code == "pair.agent_unresponsive" || s.code == "pair.version_mismatch" ||
              s.code == "pair.ship_checksum_mismatch" || s.code == "pair.ship_failed" ||
              s.code == "pair.ship_unsafe_dir";
    std::string fix =
        s.code == "pair.version_mismatch"
            ? "install the same fabkit-fabcheck version on every node (docs/install.md), or run "
              "with --ship so the agents run this controller's own binary"
        : s.code == "pair.ship_checksum_mismatch"
            ? "the copy of fabcheck that reached " + s.host +
                  " differs from this controller's binary: check the host's disk space and "
                  "memory, then retry; install the package there if it keeps happening"
        : s.code == "pair.ship_unsafe_dir"
            ? "give --ship-dir a directory on " + s.host +
                  " that only root (or the login user) can change, all the way up to /: owned by "
                  "them and not writable by group or others unless sticky, like /tmp (the "
                  "default); never a directory another user owns"
        : s.code == "pair.ship_failed"
            ? "run the quoted command by hand; --ship needs sh, mktemp, head and sha256sum on the "
              "host (coreutils) and, with srun, sbcast inside the allocation"
        : s.code == "pair.launch_failed"
            ? "run the launcher by hand: it must start `fabcheck agent` on " + s.host +
                  " (ssh: key-based login and the same fabcheck path, or --agent-path)"
        : s.code == "pair.agent_unreachable"
            ? "open the agent's port from this machine to " + s.host +
                  ", or run the controller on a node of the cluster"
        : s.code == "pair.agent_impostor"
            ? "find the process listening on the address and port quoted (ss -ltnp on " + s.host +
                  " or on this machine for a docker0/virbr0 address); start the agent with --bind "
                  "on the "
                  "cluster address so it reports only that one"
        : s.code == "pair.agent_lost"
            ? "check the agent's host (" + s.host +
                  "): OOM killer, node reboot, or a crashed agent (its stderr is quoted)"
        : s.code == "pair.agent_unresponsive"
            ? "check the agent's process on " + s.host +
                  " (`ps -o stat,pid,cmd -C fabcheck`: state T is stopped; "
                  "`kill -CONT PID` or find what stopped it) and the host's load"
            : "re-run with a larger --timeout-ms; check the host's load and the path between the "
              "agents";
    out.push_back(fail(s.code, s.host.empty() ? f.host_a + "<->" + f.host_b : s.host,
                       "step '" + s.step + "' failed: " + s.error, fix));
  }
  for (const auto& r : refused_address_findings(f.refused_addresses)) out.push_back(r);
  // A lost agent ended the session: what was measured before it is still judged below, but "no
  // transports" and the recommendation would speak of a comparison that never finished.

  const auto best = v.link;
  if (!f.links.empty() && !best)
    out.push_back(fail("pair.no_reachable_link", f.host_a + "<->" + f.host_b,
                       "none of the " + std::to_string(f.links.size()) +
                           " candidate interface pairs accepted a TCP connection",
                       "check routes and firewalls between the hosts: `ip route get <peer address>` "
                       "and `nft list ruleset` on both"));
  for (size_t i = 0; i < f.links.size(); ++i) {
    const auto& l = f.links[i];
    if (l.status != "open") {
      out.push_back(info("pair.link_unreachable", link_name(l),
                         "candidate pair is " + l.status + ": " + l.error +
                             " — do not point NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME at it"));
    } else if (best && i != *best && l.single_stream_gbit_s < 0.5 * f.links[*best].single_stream_gbit_s) {
      out.push_back(info("pair.link_slower", link_name(l),
                         "reachable but " + fmt(l.single_stream_gbit_s) + " Gbit/s vs " +
                             fmt(f.links[*best].single_stream_gbit_s) + " Gbit/s on " +
                             link_name(f.links[*best])));
    }
  }
  if (best) {
    const auto& l = f.links[*best];
    if (l.a.mtu && l.b.mtu && *l.a.mtu != *l.b.mtu)
      out.push_back(warn("pair.mtu_mismatch", link_name(l),
                         "MTU " + std::to_string(*l.a.mtu) + " on " + f.host_a + " vs " +
                             std::to_string(*l.b.mtu) + " on " + f.host_b +
                             "; large frames are dropped or fragmented on the way",
                         "set the same MTU on both ends: `ip link set dev IFACE mtu N`"));
    if (!link_rate_gbit_s(l.a, l.b))
      out.push_back(warn("pair.link_speed_unknown", link_name(l),
                         "the interface speed is unknown on at least one end (speed_mbps null), so "
                         "no fraction of the link rate can be computed; no default is assumed",
                         "read it with `ethtool IFACE`; virtual interfaces often report none"));
  }
  const auto& p = f.rendezvous;
  if (p.ran) {
    std::string subj = p.listen_addr + ":" + std::to_string(p.port);
    if (p.listen_status == "in_use")
      out.push_back(warn("pair.port_in_use", subj, "the rendezvous port is taken on " + f.host_a +
                         ": " + p.error + "; torchrun's rank 0 would fail to listen there",
                         "pick another --port (MASTER_PORT) or stop the process holding it: `ss -ltnp 'sport = :" +
                             std::to_string(p.port) + "'`"));
    else if (p.status == "blocked")
      out.push_back(fail("pair.port_blocked", subj, "no answer from " + p.from_addr + " within " +
                         std::to_string(p.timeout_ms) + " ms: a firewall drops the rendezvous port",
                         "allow it on " + f.host_a + ": `nft add rule inet filter input tcp dport " +
                             std::to_string(p.port) + " accept` (or the iptables/firewalld equivalent)"));
    else if (p.status == "closed")
      out.push_back(fail("pair.port_closed", subj, "connection refused (RST) although the agent "
                         "listened: a REJECT rule or something in between answers for the port",
                         "remove the reject rule for port " + std::to_string(p.port) + " on " + f.host_a));
    else if (p.status != "open")
      out.push_back(fail("pair.port_unreachable", subj, "rendezvous port check: " + p.status + ": " + p.error,
                         "check the route from " + f.host_b + " to " + p.listen_addr));
  }
  for (const auto& r : v.ranking) {
    if (r.status == "unavailable") {
      std::string reason;
      for (const auto& t : f.transports) if (t.transport == r.transport) reason = t.reason;
      out.push_back(info("pair.transport_unavailable", r.transport, reason));
    } else if (r.status != "ok") {
      const TransportResult* t = nullptr;
      for (const auto& x : f.transports)
        if (x.transport == r.transport) t = &x;
      if (t == nullptr) continue;
      if (auto crash = crashed_runner_finding(*t, {f.host_a, f.host_b})) {
        out.push_back(*crash);
        continue;
      }
      out.push_back(warn("pair.transport_failed", r.transport, "the run failed: " + t->reason,
                         "see the transport's error kind in the JSON (ranks[].extra.error)"));
    } else if (!r.all_correct) {
      out.push_back(fail("pair.allreduce_incorrect", r.transport,
                         "at least one size gave a wrong all-reduce result",
                         "do not train over this transport; re-run and report the sizes that failed"));
    }
  }
  if (f.transports.empty() && best && !f.transports_skipped && !aborted)
    out.push_back(warn("pair.no_transports", f.host_a + "<->" + f.host_b,
                       "no all-reduce transport was run: the agents have none in common",
                       "use the same fabcheck build (with fabric/allreduce) on both hosts"));
  if (v.transport && best && !aborted) {
    const auto& l = f.links[*best];
    out.push_back(info("pair.recommended", f.host_a + "<->" + f.host_b,
                       "use " + *v.transport + " over " + l.a.ifname + " (" + f.host_a + ") / " +
                           l.b.ifname + " (" + f.host_b + "): " + v.reason));
  }
  return out;
}

std::vector<Finding> pair_findings(const PairFacts& f, const Verdict& v) {
  std::vector<Finding> out = judge_pair(f, v);
  for (auto& fd : judge_rdma_rc(f)) out.push_back(std::move(fd));
  for (auto& fd : judge_ofi_rdm(f)) out.push_back(std::move(fd));
  return out;
}

}  // namespace fabkit::pair
