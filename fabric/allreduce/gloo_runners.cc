// Gloo over its TCP and ibverbs transports, measured with the same sweep and check as fabkit's:
// over TCP Gloo's own all-reduce (the figure PyTorch's CPU path, ProcessGroupGloo, gets); over
// ibverbs fabkit's ring on Gloo's device, pairs and registered buffers (gloo_ibverbs_ring.h).
#include <infiniband/verbs.h>

#include <gloo/allreduce.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/ibverbs/device.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "common/errors.h"
#include "fabric/allreduce/gloo_errors.h"
#include "fabric/allreduce/gloo_ibverbs_ring.h"
#include "fabric/allreduce/gloo_store.h"
#include "fabric/allreduce/runners.h"
#include "fabric/allreduce/sweep.h"

namespace fabkit::fabric {
namespace {

TransportRun failed_run(const std::string& transport, const std::string& status, const std::string& kind,
                        const std::string& reason) {
  TransportRun run;
  run.transport = transport;
  run.status = status;
  run.reason = reason;
  run.extra["error"] = kind;
  return run;
}

TokenStoreOptions store_options(const AllreduceSpec& spec, const std::string& transport) {
  TokenStoreOptions o;
  o.rank = spec.rank;
  o.world_size = spec.world_size;
  o.local_addr = spec.world_size == 2 ? spec.local_addr : spec.ring_addrs[static_cast<size_t>(spec.rank)];
  o.rank0_addr = spec.world_size == 2 ? spec.peer_addr : spec.ring_addrs[0];
  o.port = spec.port;
  o.ifname = spec.ifname;
  o.token = spec.token;
  std::string plan = transport + "|" + std::to_string(spec.world_size) + "|" + std::to_string(spec.iters) + "|" +
                     std::to_string(spec.warmup_iters);
  for (uint64_t b : effective_sizes(spec)) plan += "|" + std::to_string(b);
  o.plan_digest = fnv1a64(plan);
  o.timeout_ms = spec.timeout_ms;
  return o;
}

TransportRun finish(const std::string& transport, std::vector<SizeResult> sizes) {
  TransportRun run;
  run.transport = transport;
  run.sizes = std::move(sizes);
  bool ok = true;
  for (const auto& s : run.sizes) ok = ok && s.correct;
  run.status = ok ? "ok" : "failed";
  if (!ok) {
    run.reason = "result check failed for at least one size (see sizes[].correct)";
    run.extra["error"] = "wrong_result";
  }
  return run;
}

SweepOptions sweep_options(const AllreduceSpec& spec) {
  SweepOptions opt;
  opt.world_size = spec.world_size;
  opt.iters = spec.iters;
  opt.warmup_iters = spec.warmup_iters;
  opt.on_size_done = spec.on_size_done;
  return opt;
}

// Shared by both transports: rendezvous through the token store, then the timed sweep.
template <typename Body>
TransportRun run_guarded(const std::string& transport, Body body) {
  try {
    return body();
  } catch (const PeerError& e) {
    return failed_run(transport, "failed", e.kind(), e.what());
  } catch (const UsageError& e) {
    return failed_run(transport, "failed", "invalid_spec", e.what());
  } catch (const gloo::Exception& e) {
    return failed_run(transport, "failed", gloo_error_kind(e.what()), std::string("gloo: ") + e.what());
  } catch (const std::bad_alloc&) {
    return failed_run(transport, "failed", "out_of_memory",
                      "could not allocate the buffers for the largest size");
  }
}

}  // namespace

TransportRun run_gloo_tcp_allreduce(const AllreduceSpec& spec) {
  const std::string transport = "gloo-tcp";
  return run_guarded(transport, [&] {
    validate_spec(spec);
    TokenStore store(store_options(spec, transport));
    gloo::transport::tcp::attr attr;
    // Bind Gloo's listening and connecting sockets to the chosen interface's address.
    attr.hostname = store_options(spec, transport).local_addr;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(spec.rank, spec.world_size);
    context->setTimeout(std::chrono::milliseconds(spec.timeout_ms));
    context->connectFullMesh(store, device);
    uint32_t tag = 0;
    // The same call ProcessGroupGloo makes: gloo::allreduce with the ring and gloo::sum<float>.
    CollectiveFn fn = [&](const float* in, float* out, uint64_t count) {
      gloo::AllreduceOptions opts(context);
      opts.setInput(const_cast<float*>(in), count);
      opts.setOutput(out, count);
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTag(tag++);
      opts.setTimeout(std::chrono::milliseconds(spec.timeout_ms));
      gloo::allreduce(opts);
    };
    std::vector<SizeResult> results;
    try {
      results = run_sweep(effective_sizes(spec), spec.rank, sweep_options(spec), fn);
    } catch (const gloo::Exception& e) {
      // Only after a timeout: it closed every pair, so the probe's send cannot reach the peer.
      std::string cause = gloo_error_kind(e.what()) == "peer_timeout"
                              ? recorded_pair_error(*context, spec.rank)
                              : "";
      if (cause.empty()) throw;
      throw PeerError("peer_closed",
                      "gloo: " + cause + " (Gloo raised it only at its " +
                          std::to_string(spec.timeout_ms) +
                          " ms timeout: a send in flight when the peer went is not woken by "
                          "the socket error)");
    }
    TransportRun run = finish(transport, std::move(results));
    run.extra["algorithm"] = "gloo::allreduce ring (max segment 1 MiB)";
    run.extra["device"] = device->str();
    return run;
  });
}

TransportRun run_gloo_ibverbs_allreduce(const AllreduceSpec& spec, const std::string& hca, int port, int gid_index) {
  const std::string transport = "gloo-ibverbs";
  // Look before Gloo does: with no RDMA device Gloo's ibverbs code asserts deep inside, and "no
  // device" is an answer for the verdict, not a failure.
  int num = 0;
  ibv_device** list = ibv_get_device_list(&num);
  int list_errno = errno;
  std::vector<std::string> names;
  for (int i = 0; list && i < num; ++i) names.push_back(ibv_get_device_name(list[i]));
  if (list) ibv_free_device_list(list);
  if (names.empty()) {
    std::string why = list ? "no RDMA device (ibv_get_device_list found none)"
                           : std::string("no RDMA device (ibv_get_device_list: ") + std::strerror(list_errno) + ")";
    TransportRun run = failed_run(transport, "unavailable", "no_rdma_device", why);
    return run;
  }
  if (std::find(names.begin(), names.end(), hca) == names.end()) {
    std::string present;
    for (const auto& n : names) present += (present.empty() ? "" : ", ") + n;
    return failed_run(transport, "unavailable", "no_such_hca", "HCA '" + hca + "' not found (present: " + present + ")");
  }
  std::string left_allocated;
  TransportRun run = run_guarded(transport, [&] {
    validate_spec(spec);
    TokenStore store(store_options(spec, transport));
    // Gloo indexes the GID table directly; on an InfiniBand link layer GID 0 (the port GID) is the
    // right one, so "auto" (-1) means 0 here. RoCE callers pass the node probe's RoCE v2 index.
    gloo::transport::ibverbs::attr attr{hca, port, gid_index < 0 ? 0 : gid_index};
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::ibverbs::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(spec.rank, spec.world_size);
    context->setTimeout(std::chrono::milliseconds(spec.timeout_ms));
    context->connectFullMesh(store, device);
    // Not gloo::AllreduceRing: gloo_ibverbs_ring.h says why.
    const auto sizes = effective_sizes(spec);
    auto ring = std::make_unique<GlooIbverbsRing>(
        context, store, *std::max_element(sizes.begin(), sizes.end()), spec.timeout_ms);
    SweepOptions opt = sweep_options(spec);
    opt.in_buffer = ring->input();
    opt.out_buffer = ring->output();
    std::vector<SizeResult> results;
    try {
      // In place on the ring's registered memory: `in` and `out` are its input and output.
      results = run_sweep(sizes, spec.rank, opt,
                          [&](const float*, float*, uint64_t count) { ring->allreduce(count); });
    } catch (...) {
      if (!ring->settle()) {
        left_allocated = std::to_string(ring->writes_pending()) +
                         " RDMA write(s) still pending when the run failed: Gloo's buffers, "
                         "queue pairs and device were left allocated (destroying a buffer with a "
                         "send pending throws from its destructor)";
        leave_allocated(std::move(ring), std::move(context), std::move(device));
      }
      throw;
    }
    TransportRun run = finish(transport, std::move(results));
    run.extra["algorithm"] =
        "fabkit ring on Gloo's ibverbs transport: reduce-scatter + all-gather as RDMA writes "
        "with immediate into registered memory, in chunks, completions polled by the caller";
    run.extra["chunk_bytes"] = GlooIbverbsRing::kChunkBytes;
    run.extra["world_size"] = spec.world_size;
    run.extra["device"] = device->str();
    run.extra["hca"] = hca;
    run.extra["port"] = port;
    run.extra["gid_index"] = gid_index;
    return run;
  });
  if (!left_allocated.empty()) run.extra["left_allocated"] = left_allocated;
  return run;
}

}  // namespace fabkit::fabric
