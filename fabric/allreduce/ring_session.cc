// The ring session: the cluster search's group test as one runner. A group test runs every
// Walecki ring order of its group (fabric/pair/group_controller.h); one runner per order paid a
// process start and a ring's connections each time (0.80 s an order on the netns hosts, the
// search's largest cost at 1,024 nodes: docs/cluster.md, "Simulator"). Here each rank connects once
// to every other rank of the group (a full mesh: the orders together put every pair side by side),
// then runs the orders one after the other, each on the two connections of its neighbours in it.
//
// Why the streams stay aligned without a barrier between orders: a rank finishes its sends and
// receives of order k before it starts order k+1, and every connection is a pair of ordered byte
// streams, so what x sends y in order k+1 queues behind what it sent y in order k, which y reads
// first; the byte counts of every order are fixed by the plan both ends agreed on (the digest).
#include <algorithm>
#include <future>
#include <system_error>

#include "common/errors.h"
#include "fabric/allreduce/runners.h"
#include "fabric/allreduce/session_socket.h"
#include "fabric/allreduce/socket_collective.h"
#include "fabric/allreduce/sweep.h"

namespace fabkit::fabric {
namespace {

const char* const kTransport = "fabkit-socket";

uint64_t session_digest(const AllreduceSpec& spec, const std::vector<std::vector<int>>& orders) {
  std::string plan = "ring-session|" + std::to_string(spec.world_size) + "|" +
                     std::to_string(spec.iters) + "|" + std::to_string(spec.warmup_iters);
  for (uint64_t b : effective_sizes(spec)) plan += "|" + std::to_string(b);
  for (const auto& o : orders) {
    plan += "|";
    for (int r : o) plan += std::to_string(r) + ",";
  }
  return fnv1a64(plan);
}

void check_orders(const std::vector<std::vector<int>>& orders, int world) {
  if (orders.empty()) throw UsageError("a ring session needs at least one ring order");
  for (const auto& o : orders) {
    std::vector<char> seen(static_cast<size_t>(world), 0);
    bool ok = static_cast<int>(o.size()) == world;
    for (int r : o) {
      ok = ok && r >= 0 && r < world && !seen[static_cast<size_t>(r)];
      if (ok) seen[static_cast<size_t>(r)] = 1;
    }
    if (!ok)
      throw UsageError("ring order is not a permutation of the " + std::to_string(world) +
                       " ranks");
  }
}

// mesh[j]: the connection to rank j (empty for our own rank). Rank i accepts the i ranks below
// it and connects to the ranks above it, from a helper thread (everyone connecting first would
// wait in a circle); a hello naming a rank that is not below ours, or one twice, is refused.
std::vector<Fd> connect_mesh(const AllreduceSpec& spec, uint64_t digest, std::string* note) {
  const int n = spec.world_size, me = spec.rank;
  const auto& addrs = spec.ring_addrs;
  HelloInfo mine{static_cast<uint32_t>(me), static_cast<uint32_t>(n), digest};
  std::vector<Fd> mesh(static_cast<size_t>(n));
  Fd listener = listen_on(addrs[static_cast<size_t>(me)], spec.port, spec.ifname);
  auto up = std::async(std::launch::async, [&] {
    std::vector<Fd> out;
    for (int j = me + 1; j < n; ++j)
      out.push_back(connect_peer(addrs[static_cast<size_t>(j)], spec.port,
                                 addrs[static_cast<size_t>(me)], spec.ifname, spec.token, mine,
                                 spec.timeout_ms, nullptr));
    return out;
  });
  std::exception_ptr accept_error;
  try {
    for (auto& p :
         accept_peers(listener.get(), static_cast<size_t>(me), spec.token, mine, spec.timeout_ms)) {
      const int from = static_cast<int>(p.hello.rank);
      if (from >= me || mesh[static_cast<size_t>(from)])
        throw PeerError("unexpected_peer",
                        "rank " + std::to_string(me) + " was reached by a rank " +
                            std::to_string(from) +
                            " it does not wait for (it accepts each lower rank once)");
      mesh[static_cast<size_t>(from)] = std::move(p.fd);
    }
  } catch (...) {
    accept_error = std::current_exception();
  }
  std::vector<Fd> higher = up.get();
  if (accept_error) std::rethrow_exception(accept_error);
  for (size_t k = 0; k < higher.size(); ++k)
    mesh[static_cast<size_t>(me) + 1 + k] = std::move(higher[k]);
  for (int j = 0; j < n; ++j) {
    if (j == me) continue;
    set_nonblocking(mesh[static_cast<size_t>(j)].get());
    const std::string t =
        tune_data_socket(mesh[static_cast<size_t>(j)].get(), spec.socket_buffer_bytes);
    if (note->empty()) *note = t;  // the same note for every connection: once
  }
  return mesh;
}

}  // namespace

RingSessionRun run_fabkit_socket_ring_session(const AllreduceSpec& spec,
                                              const std::vector<std::vector<int>>& orders) {
  RingSessionRun out;
  auto fail_all = [&](const std::string& kind, const std::string& reason) {
    out.session = failed_run(kTransport, kind, reason);
    out.orders.clear();
    return out;
  };
  try {
    validate_spec(spec);
    check_orders(orders, spec.world_size);
    if (static_cast<int>(spec.ring_addrs.size()) != spec.world_size)
      throw UsageError("a ring session needs ring_addrs for every rank");
    std::string note;
    std::vector<Fd> mesh = connect_mesh(spec, session_digest(spec, orders), &note);
    for (const auto& order : orders) {
      const int n = spec.world_size;
      const int pos =
          static_cast<int>(std::find(order.begin(), order.end(), spec.rank) - order.begin());
      const int right = order[static_cast<size_t>((pos + 1) % n)];
      const int left = order[static_cast<size_t>((pos + n - 1) % n)];
      AllreduceSpec in_order = spec;
      in_order.rank = pos;  // the ring schedule works on places in the ring
      TransportRun run =
          sweep_on_links(in_order, Collective::kAllreduce, mesh[static_cast<size_t>(right)].get(),
                         mesh[static_cast<size_t>(left)].get(), note);
      const bool ok = run.status == "ok";
      out.orders.push_back(std::move(run));
      // A failed order leaves its connections mid-stream: the orders after it cannot run on them.
      if (!ok) break;
    }
    const bool all = out.orders.size() == orders.size() && out.orders.back().status == "ok";
    out.session.transport = kTransport;
    out.session.status = all ? "ok" : "failed";
    out.session.extra["world_size"] = spec.world_size;
    out.session.extra["orders"] = orders.size();
    if (!all) {
      out.session.reason =
          "ring order " + std::to_string(out.orders.size()) + " of " +
          std::to_string(orders.size()) + " failed: " + out.orders.back().reason +
          (out.orders.size() < orders.size() ? " (the orders after it did not run)" : "");
      out.session.extra["error"] = out.orders.back().extra.value("error", "failed");
    }
    return out;
  } catch (const PeerError& e) {
    return fail_all(e.kind(), e.what());
  } catch (const UsageError& e) {
    return fail_all("invalid_spec", e.what());
  } catch (const std::system_error& e) {  // no helper thread to be had
    return fail_all("io_error", std::string("could not start the connecting thread: ") + e.what());
  }
}

Json to_json(const RingSessionRun& r) {
  Json j = to_json(r.session);
  Json orders = Json::array();
  for (const auto& o : r.orders) orders.push_back(to_json(o));
  j["orders"] = orders;
  return j;
}

}  // namespace fabkit::fabric
