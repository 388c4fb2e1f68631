// fabkit's own CPU all-reduce over TCP (float32 sum) and the raw full-duplex exchange beside it.
#include <cstdlib>
#include <future>
#include <memory>

#include "common/errors.h"
#include "fabric/allreduce/ring_schedule.h"
#include "fabric/allreduce/runners.h"
#include "fabric/allreduce/send_recv_engine.h"
#include "fabric/allreduce/session_socket.h"
#include "fabric/allreduce/socket_collective.h"
#include "fabric/allreduce/sweep.h"

namespace fabkit::fabric {
namespace {

// The most one recv() puts in the bounce buffer before it is added (right away, while in cache).
// 1 MiB = one core's L2 on this machine's EPYC. Measured between two netns hosts at 64 MiB
// (6-round A/B, medians of fabkit/raw): 256 KiB 0.83, 1 MiB 0.87; 4 and 16 MiB were not
// distinguishable from 1 MiB in the noise. Fewer, larger recv() calls matter more here than the
// last bit of cache locality.
constexpr size_t kChunkBytes = 1 << 20;

struct Links {
  Fd right;   // we send to rank+1
  Fd left;    // we receive from rank-1 (for 2 ranks: the same connection as `right`)
  std::string note;
  int send_fd() const { return right.get(); }
  int recv_fd() const { return left ? left.get() : right.get(); }
};

}  // namespace

uint64_t plan_digest(const std::string& collective, const AllreduceSpec& spec, const std::vector<uint64_t>& sizes) {
  std::string plan = collective + "|" + std::to_string(spec.world_size) + "|" + std::to_string(spec.iters) + "|" +
                     std::to_string(spec.warmup_iters);
  for (uint64_t b : sizes) plan += "|" + std::to_string(b);
  return fnv1a64(plan);
}

namespace {

Links connect_ring(const AllreduceSpec& spec, uint64_t digest) {
  Links links;
  HelloInfo mine{static_cast<uint32_t>(spec.rank), static_cast<uint32_t>(spec.world_size), digest};
  if (spec.world_size == 2) {
    // One full-duplex connection: rank 0 listens, rank 1 connects (the contract's rendezvous).
    if (spec.rank == 0) {
      Fd listener = listen_on(spec.local_addr, spec.port, spec.ifname);
      links.right = accept_peer(listener.get(), spec.token, mine, spec.timeout_ms, nullptr);
    } else {
      links.right = connect_peer(spec.peer_addr, spec.port, spec.local_addr, spec.ifname, spec.token, mine,
                                 spec.timeout_ms, nullptr);
    }
  } else {
    // Rings of n > 2: listen on our own address, connect to the right neighbour from a helper
    // thread while accepting the left one (everyone connecting first would wait in a circle).
    const auto& addrs = spec.ring_addrs;
    int right = (spec.rank + 1) % spec.world_size;
    Fd listener = listen_on(addrs[static_cast<size_t>(spec.rank)], spec.port, spec.ifname);
    auto fut = std::async(std::launch::async, [&] {
      return connect_peer(addrs[static_cast<size_t>(right)], spec.port, addrs[static_cast<size_t>(spec.rank)],
                          spec.ifname, spec.token, mine, spec.timeout_ms, nullptr);
    });
    std::exception_ptr accept_error;
    try {
      links.left = accept_peer(listener.get(), spec.token, mine, spec.timeout_ms, nullptr);
    } catch (...) {
      accept_error = std::current_exception();
    }
    links.right = fut.get();
    if (accept_error) std::rethrow_exception(accept_error);
  }
  for (int fd : {links.send_fd(), links.recv_fd()}) {
    set_nonblocking(fd);
    links.note += tune_data_socket(fd, spec.socket_buffer_bytes);
  }
  return links;
}

struct FreeChar {
  void operator()(char* p) const { std::free(p); }
};

}  // namespace

TransportRun failed_run(const std::string& transport, const std::string& kind, const std::string& reason) {
  TransportRun run;
  run.transport = transport;
  run.status = "failed";
  run.reason = reason;
  run.extra["error"] = kind;
  return run;
}

namespace {

TransportRun run_socket_collective(const AllreduceSpec& spec, Collective what) {
  const std::string transport = what == Collective::kAllreduce ? "fabkit-socket" : "raw-exchange";
  try {
    validate_spec(spec);
    Links links = connect_ring(spec, plan_digest(transport, spec, effective_sizes(spec)));
    return sweep_on_links(spec, what, links.send_fd(), links.recv_fd(), links.note);
  } catch (const PeerError& e) {
    return failed_run(transport, e.kind(), e.what());
  } catch (const UsageError& e) {
    return failed_run(transport, "invalid_spec", e.what());
  }
}

}  // namespace

TransportRun sweep_on_links(const AllreduceSpec& spec, Collective what, int send_fd, int recv_fd,
                            const std::string& socket_notes) {
  const std::string transport = what == Collective::kAllreduce ? "fabkit-socket" : "raw-exchange";
  try {
    auto sizes = effective_sizes(spec);
    std::unique_ptr<char, FreeChar> bounce(static_cast<char*>(std::aligned_alloc(4096, kChunkBytes)));
    if (!bounce) throw std::bad_alloc();
    SendRecvConfig cfg;
    cfg.send_fd = send_fd;
    cfg.recv_fd = recv_fd;
    cfg.chunk_bytes = kChunkBytes;
    cfg.timeout_ms = spec.timeout_ms;
    int iteration = 0;
    CollectiveFn fn = [&](const float* in, float* out, uint64_t count) {
      cfg.context = transport + ", size " + std::to_string(count * sizeof(float)) + " B, call " + std::to_string(++iteration);
      if (what == Collective::kAllreduce) {
        RingOps ops = allreduce_ops(in, out, count, spec.rank, spec.world_size);
        run_send_recv(cfg, ops.sends, ops.recvs, bounce.get());
      } else {
        // Same bytes each way as the all-reduce puts on the wire, received straight into the
        // output: the ceiling of what this connection moves with no arithmetic.
        std::vector<SendOp> sends{{reinterpret_cast<const char*>(in), count * sizeof(float), -1}};
        std::vector<RecvOp> recvs{{reinterpret_cast<char*>(out), count * sizeof(float), nullptr}};
        run_send_recv(cfg, sends, recvs, bounce.get());
      }
    };
    SweepOptions opt;
    opt.world_size = spec.world_size;
    opt.iters = spec.iters;
    opt.warmup_iters = spec.warmup_iters;
    opt.on_size_done = spec.on_size_done;
    opt.copy_check = what == Collective::kRawExchange;
    opt.peer_rank = (spec.rank + spec.world_size - 1) % spec.world_size;
    TransportRun run;
    run.transport = transport;
    run.sizes = run_sweep(sizes, spec.rank, opt, fn);
    if (what == Collective::kRawExchange) {
      // busbw of an exchange = the bytes each ring link carried per direction per second, which is
      // what an n-rank ring all-reduce's busbw measures too; so the two compare directly. Each rank
      // sends its whole buffer to its right neighbour once (for 2 ranks: both ways on one
      // connection), so that is algbw for any n (algbw * 2(n-1)/n for n = 2, as before).
      for (auto& s : run.sizes) s.busbw_gbps = s.algbw_gbps;
    }
    bool all_correct = true;
    for (const auto& s : run.sizes) all_correct = all_correct && s.correct;
    run.status = all_correct ? "ok" : "failed";
    run.reason = all_correct ? "" : "result check failed for at least one size (see sizes[].correct)";
    if (!all_correct) run.extra["error"] = "wrong_result";
    if (what == Collective::kAllreduce) {
      run.extra["algorithm"] = spec.world_size == 2
                                   ? "2 ranks: whole exchange + reduce up to " + std::to_string(kWholeExchangeMaxBytes) +
                                         " B, ring reduce-scatter + all-gather above, pipelined"
                                   : "ring reduce-scatter + all-gather, pipelined";
      Json per_size = Json::array();
      for (const auto& s : run.sizes)
        per_size.push_back(algorithm_name(choose_allreduce_algorithm(s.bytes, spec.world_size)));
      run.extra["algorithm_per_size"] = per_size;
    } else {
      run.extra["algorithm"] = "full-duplex exchange, no reduction";
    }
    run.extra["chunk_bytes"] = kChunkBytes;
    run.extra["socket_buffer_bytes"] = spec.socket_buffer_bytes;
    run.extra["world_size"] = spec.world_size;
    if (!socket_notes.empty()) run.extra["socket_notes"] = socket_notes;
    return run;
  } catch (const PeerError& e) {
    return failed_run(transport, e.kind(), e.what());
  } catch (const UsageError& e) {
    return failed_run(transport, "invalid_spec", e.what());
  } catch (const std::bad_alloc&) {
    return failed_run(transport, "out_of_memory", "could not allocate the buffers for the largest size");
  }
}

TransportRun run_fabkit_socket_allreduce(const AllreduceSpec& spec) {
  return run_socket_collective(spec, Collective::kAllreduce);
}

TransportRun run_raw_exchange(const AllreduceSpec& spec) { return run_socket_collective(spec, Collective::kRawExchange); }

}  // namespace fabkit::fabric
