#include "fabric/allreduce/ring_schedule.h"

namespace fabkit::fabric {

std::vector<Segment> ring_segments(uint64_t count, int world_size) {
  std::vector<Segment> segs(static_cast<size_t>(world_size));
  uint64_t n = static_cast<uint64_t>(world_size);
  uint64_t base = count / n, extra = count % n, first = 0;
  for (uint64_t i = 0; i < n; ++i) {
    segs[i].first = first;
    segs[i].count = base + (i < extra ? 1 : 0);
    first += segs[i].count;
  }
  return segs;
}

RingOps ring_allreduce_ops(const float* in, float* out, uint64_t count, int rank, int world_size) {
  RingOps ops;
  const int n = world_size;
  auto segs = ring_segments(count, n);
  auto seg_at = [&](int k) { return segs[static_cast<size_t>(((k % n) + n) % n)]; };
  auto bytes = [](const Segment& s) { return static_cast<size_t>(s.count * sizeof(float)); };
  // Reduce-scatter: at step s send segment (rank - s), receive (rank - s - 1) and add our input.
  // Step 0 sends our raw input; later steps forward the partial sum received one step earlier,
  // which is why send op s depends on recv op s-1 (the same segment).
  for (int s = 0; s < n - 1; ++s) {
    Segment snd = seg_at(rank - s), rcv = seg_at(rank - s - 1);
    const float* src = s == 0 ? in + snd.first : out + snd.first;
    ops.sends.push_back({reinterpret_cast<const char*>(src), bytes(snd), s == 0 ? -1 : s - 1});
    ops.recvs.push_back({reinterpret_cast<char*>(out + rcv.first), bytes(rcv), in + rcv.first});
  }
  // All-gather: forward the fully reduced segment (rank + 1 - s), receive (rank - s) straight into
  // the output: no bounce, no arithmetic, the kernel's copy is the only touch.
  for (int s = 0; s < n - 1; ++s) {
    Segment snd = seg_at(rank + 1 - s), rcv = seg_at(rank - s);
    int step = n - 1 + s;
    ops.sends.push_back({reinterpret_cast<const char*>(out + snd.first), bytes(snd), step - 1});
    ops.recvs.push_back({reinterpret_cast<char*>(out + rcv.first), bytes(rcv), nullptr});
  }
  return ops;
}

RingOps whole_exchange_ops(const float* in, float* out, uint64_t count) {
  size_t bytes = static_cast<size_t>(count * sizeof(float));
  RingOps ops;
  ops.sends.push_back({reinterpret_cast<const char*>(in), bytes, -1});
  ops.recvs.push_back({reinterpret_cast<char*>(out), bytes, in});
  return ops;
}

AllreduceAlgorithm choose_allreduce_algorithm(uint64_t bytes, int world_size) {
  return world_size == 2 && bytes <= kWholeExchangeMaxBytes ? AllreduceAlgorithm::kWholeExchange
                                                            : AllreduceAlgorithm::kRing;
}

const char* algorithm_name(AllreduceAlgorithm a) {
  return a == AllreduceAlgorithm::kWholeExchange ? "whole-exchange" : "ring";
}

RingOps allreduce_ops(const float* in, float* out, uint64_t count, int rank, int world_size) {
  if (choose_allreduce_algorithm(count * sizeof(float), world_size) == AllreduceAlgorithm::kWholeExchange)
    return whole_exchange_ops(in, out, count);
  return ring_allreduce_ops(in, out, count, rank, world_size);
}

}  // namespace fabkit::fabric
