#include "trainer/model/cross_entropy_cpu.h"

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/errors.h"
#include "trainer/model/cpu_vec.h"

namespace fabkit::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kRowsPerTask = 16;
using namespace cpu_vec;  // VecF, load/store/splat, exp_nonpositive

// The row kernels below are cloned for AVX2 and AVX-512 (cpu_vec.h); the tails (past a multiple
// of 16) go through expf.
FABKIT_VEC_CLONES
float row_max(const float* x, int64_t n) {
  VecF lanes = splat(-INFINITY);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const VecF v = load(x + j);
    lanes = lanes < v ? v : lanes;
  }
  float m = -INFINITY;
  for (; j < n; ++j) m = m < x[j] ? x[j] : m;
  for (int l = 0; l < kLanes; ++l) m = m < lanes[l] ? lanes[l] : m;
  return m;
}

FABKIT_VEC_CLONES
double row_sum_exp(const float* x, int64_t n, float shift) {
  VecF lanes = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) lanes += exp_nonpositive(load(x + j) - shift);
  double s = 0.0;
  for (; j < n; ++j) s += std::exp(x[j] - shift);
  for (int l = 0; l < kLanes; ++l) s += lanes[l];
  return s;
}

// d[j] = scale * exp(x[j] - lse): the softmax, scaled by the incoming gradient.
FABKIT_VEC_CLONES
void row_softmax_scaled(const float* x, float* d, int64_t n, float lse, float scale) {
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) store(d + j, exp_nonpositive(load(x + j) - lse) * scale);
  for (; j < n; ++j) d[j] = scale * std::exp(x[j] - lse);
}

// A bf16 row is widened into a per-thread row of floats (never the whole block).
const float* row_as_float(const float* x, int64_t, std::vector<float>&) { return x; }
const float* row_as_float(const c10::BFloat16* x, int64_t n, std::vector<float>& scratch) {
  scratch.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) scratch[static_cast<size_t>(j)] = static_cast<float>(x[j]);
  return scratch.data();
}

// Forward: per row, the logsumexp (kept for the backward) and its term of the sum.
template <typename T>
double forward_rows(const T* x, const int64_t* t, float* lse, int64_t rows, int64_t v,
                    int64_t ignore) {
  std::vector<double> partial(static_cast<size_t>(at::get_num_threads()), 0.0);
  at::parallel_for(0, rows, kRowsPerTask, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch;
    double sum = 0.0;
    for (int64_t r = begin; r < end; ++r) {
      if (t[r] == ignore) {
        lse[r] = 0.0f;
        continue;
      }
      const float* xr = row_as_float(x + r * v, v, scratch);
      const float m = row_max(xr, v);
      const double l = static_cast<double>(m) + std::log(row_sum_exp(xr, v, m));
      lse[r] = static_cast<float>(l);
      sum += l - static_cast<double>(xr[t[r]]);
    }
    partial[static_cast<size_t>(at::get_thread_num())] += sum;
  });
  double total = 0.0;
  for (double p : partial) total += p;  // fixed order: deterministic for a fixed thread count
  return total;
}

// Backward: d logits[r] = g * (softmax(x[r]) - onehot(t[r])), 0 on an ignored row.
template <typename T>
void backward_rows(const T* x, const int64_t* t, const float* lse, T* d, int64_t rows, int64_t v,
                   int64_t ignore, float g) {
  at::parallel_for(0, rows, kRowsPerTask, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch, out;
    for (int64_t r = begin; r < end; ++r) {
      T* dr = d + r * v;
      if (t[r] == ignore) {
        std::memset(static_cast<void*>(dr), 0, static_cast<size_t>(v) * sizeof(T));
        continue;
      }
      const float* xr = row_as_float(x + r * v, v, scratch);
      if constexpr (std::is_same_v<T, float>) {
        row_softmax_scaled(xr, dr, v, lse[r], g);
        dr[t[r]] -= g;
      } else {
        out.resize(static_cast<size_t>(v));
        row_softmax_scaled(xr, out.data(), v, lse[r], g);
        out[static_cast<size_t>(t[r])] -= g;
        for (int64_t j = 0; j < v; ++j) dr[j] = static_cast<T>(out[static_cast<size_t>(j)]);
      }
    }
  });
}

class CrossEntropySum : public torch::autograd::Function<CrossEntropySum> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits_in,
                            const at::Tensor& targets_in, int64_t ignore) {
    const at::Tensor logits = logits_in.contiguous();
    const at::Tensor targets = targets_in.contiguous();
    const int64_t rows = logits.size(0), v = logits.size(1);
    const int64_t* t = targets.data_ptr<int64_t>();
    for (int64_t r = 0; r < rows; ++r) {
      if (t[r] != ignore && (t[r] < 0 || t[r] >= v)) {
        throw UsageError("cross-entropy: target " + std::to_string(t[r]) + " at row " +
                         std::to_string(r) + " is outside the vocabulary [0, " + std::to_string(v) +
                         ") (labels must be token ids or " + std::to_string(ignore) + ")");
      }
    }
    at::Tensor lse = at::empty({rows}, logits.options().dtype(at::kFloat));
    double sum = 0.0;
    if (logits.scalar_type() == at::kFloat) {
      sum = forward_rows(logits.data_ptr<float>(), t, lse.data_ptr<float>(), rows, v, ignore);
    } else {
      sum =
          forward_rows(logits.data_ptr<c10::BFloat16>(), t, lse.data_ptr<float>(), rows, v, ignore);
    }
    ctx->save_for_backward({logits, targets, lse});
    ctx->saved_data["ignore"] = ignore;
    return at::scalar_tensor(sum, logits.options().dtype(at::kFloat));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& logits = saved[0];
    const at::Tensor& targets = saved[1];
    const at::Tensor& lse = saved[2];
    const int64_t ignore = ctx->saved_data["ignore"].toInt();
    const int64_t rows = logits.size(0), v = logits.size(1);
    const float g = grads[0].item<float>();  // a CPU scalar: no device to wait for
    at::Tensor d = at::empty_like(logits);
    if (logits.scalar_type() == at::kFloat) {
      backward_rows(logits.data_ptr<float>(), targets.data_ptr<int64_t>(), lse.data_ptr<float>(),
                    d.data_ptr<float>(), rows, v, ignore, g);
    } else {
      backward_rows(logits.data_ptr<c10::BFloat16>(), targets.data_ptr<int64_t>(),
                    lse.data_ptr<float>(), d.data_ptr<c10::BFloat16>(), rows, v, ignore, g);
    }
    return {d, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

bool cross_entropy_cpu_supports(const at::Tensor& logits) {
  return logits.is_cpu() && logits.dim() == 2 &&
         (logits.scalar_type() == at::kFloat || logits.scalar_type() == at::kBFloat16);
}

at::Tensor cross_entropy_sum_cpu(const at::Tensor& logits, const at::Tensor& targets,
                                 int64_t ignore) {
  FABKIT_ENFORCE(cross_entropy_cpu_supports(logits),
                 "cross_entropy_sum_cpu: CPU [N, V] float32 or bfloat16 logits only");
  FABKIT_ENFORCE(targets.is_cpu() && targets.scalar_type() == at::kLong && targets.dim() == 1 &&
                     targets.size(0) == logits.size(0),
                 "cross_entropy_sum_cpu: targets must be CPU int64 [N] beside logits [N, V]");
  return CrossEntropySum::apply(logits, targets, ignore);
}

}  // namespace fabkit::trainer
