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

std::vector<RingStep> ring_steps(uint64_t count, int rank, int world_size) {
  std::vector<RingStep> steps;
  const int n = world_size;
  auto segs = ring_segments(count, n);
  auto seg_at = [&](int k) { return segs[static_cast<size_t>(((k % n) + n) % n)]; };
  // Reduce-scatter: at step s send segment (rank - s), receive (rank - s - 1) and add our input.
  // Step 0 sends our raw input; later steps forward the partial sum received one step earlier.
  for (int s = 0; s < n - 1; ++s)
    steps.push_back({seg_at(rank - s), s == 0, seg_at(rank - s - 1), true});
  // All-gather: forward the fully reduced segment (rank + 1 - s), receive (rank - s) straight into
  // the output: no bounce, no arithmetic, the kernel's copy is the only touch.
  for (int s = 0; s < n - 1; ++s)
    steps.push_back({seg_at(rank + 1 - s), false, seg_at(rank - s), false});
  return steps;
}

RingOps ring_allreduce_ops(const float* in, float* out, uint64_t count, int rank, int world_size) {
  RingOps ops;
  auto bytes = [](const Segment& s) { return static_cast<size_t>(s.count * sizeof(float)); };
  int step = 0;
  for (const RingStep& st : ring_steps(count, rank, world_size)) {
    const float* src = st.send_input ? in + st.send.first : out + st.send.first;
    ops.sends.push_back({reinterpret_cast<const char*>(src), bytes(st.send), step - 1});
    ops.recvs.push_back({reinterpret_cast<char*>(out + st.recv.first), bytes(st.recv),
                         st.recv_reduce ? in + st.recv.first : nullptr});
    ++step;
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
