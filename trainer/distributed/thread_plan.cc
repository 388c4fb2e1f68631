#include "trainer/distributed/thread_plan.h"

#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include "common/errors.h"

namespace fabkit::trainer {
namespace {

std::string count_source(const std::optional<int>& flag, const char* flag_name, const std::optional<int>& env,
                         const char* env_name) {
  if (flag) return std::string(flag_name);
  if (env) return std::string(env_name);
  return "";
}

// OpenBLAS's own entry points, looked up at run time: libblas.so.3 is whichever provider
// update-alternatives chose, so the symbols exist only when that provider is OpenBLAS.
template <typename F>
F openblas_symbol(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

std::string to_string(BlasKind kind) {
  switch (kind) {
    case BlasKind::kSequential: return "sequential BLAS";
    case BlasKind::kOpenBlasPthread: return "OpenBLAS (pthread pool)";
    case BlasKind::kOpenBlasOpenMp: return "OpenBLAS (OpenMP pool)";
    case BlasKind::kUnknown: break;
  }
  return "unknown BLAS";
}

std::optional<int> parse_thread_count(const std::string& value, std::string* error) {
  const std::string first = value.substr(0, value.find(','));
  const bool digits = !first.empty() && first.size() <= 6 &&
                      std::all_of(first.begin(), first.end(), [](char c) { return c >= '0' && c <= '9'; });
  const int n = digits ? std::stoi(first) : 0;
  if (n < 1) {
    if (error) *error = "'" + value + "' is not a positive thread count";
    return std::nullopt;
  }
  return n;
}

ThreadPlan plan_threads(const ThreadFacts& f) {
  ThreadPlan p;
  // The rank's cores: Slurm's per-task count when given, else the affinity mask shared evenly by
  // the node's ranks (--nproc and torchrun start every rank with the same mask).
  int cores = std::max(1, f.allowed_cpus / std::max(1, f.local_ranks));
  std::string cores_why = std::to_string(f.allowed_cpus) + " allowed CPUs / " + std::to_string(f.local_ranks) +
                          " local rank(s)";
  if (f.slurm_cpus_per_task) {
    cores = std::max(1, std::min(f.allowed_cpus, *f.slurm_cpus_per_task));
    cores_why = "SLURM_CPUS_PER_TASK=" + std::to_string(*f.slurm_cpus_per_task);
  }
  p.cores_per_rank = cores;

  const bool two_pools = f.blas == BlasKind::kOpenBlasPthread;
  if (two_pools) {
    // GEMMs (most of a step) go to OpenBLAS's pool; ATen's element-wise ops stay on the calling
    // thread so the two pools never spin against each other.
    p.intra_op = 1;
    p.blas = cores;
  } else {
    p.intra_op = cores;
    if (f.blas == BlasKind::kOpenBlasOpenMp) p.blas = cores;  // one OpenMP pool: same count
  }
  p.reason = to_string(f.blas) + "; " + std::to_string(cores) + " core(s) per rank (" + cores_why + ")";
  if (two_pools) p.reason += "; GEMMs on BLAS's pool, element-wise ops on the calling thread";

  // Explicit requests win, each named in the log.
  if (auto n = f.flag_intra_op ? f.flag_intra_op : f.env_omp) {
    p.intra_op = *n;
    p.reason += "; intra-op " + std::to_string(*n) + " from " +
                count_source(f.flag_intra_op, "--threads", f.env_omp, "OMP_NUM_THREADS");
  }
  if (auto n = f.flag_blas ? f.flag_blas : f.env_openblas) {
    if (f.blas == BlasKind::kOpenBlasPthread || f.blas == BlasKind::kOpenBlasOpenMp) {
      p.blas = *n;
      p.reason += "; BLAS " + std::to_string(*n) + " from " +
                  count_source(f.flag_blas, "--blas-threads", f.env_openblas, "OPENBLAS_NUM_THREADS");
    } else {
      p.reason += "; BLAS thread request ignored: the loaded BLAS is not OpenBLAS";
    }
  }
  return p;
}

ThreadFacts gather_thread_facts(const Environment& env, int local_ranks, std::optional<int> flag_intra_op,
                                std::optional<int> flag_blas) {
  ThreadFacts f;
  f.machine_cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  cpu_set_t set;
  CPU_ZERO(&set);
  f.allowed_cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? std::max(1, CPU_COUNT(&set)) : f.machine_cpus;
  f.local_ranks = std::max(1, local_ranks);
  f.flag_intra_op = flag_intra_op;
  f.flag_blas = flag_blas;
  auto read = [&](const char* name) -> std::optional<int> {
    auto v = env.get(name);
    if (!v || v->empty()) return std::nullopt;
    std::string error;
    auto n = parse_thread_count(*v, &error);
    if (!n) throw UsageError(std::string(name) + "=" + error + ": set a positive integer or unset it");
    return n;
  };
  f.env_omp = read("OMP_NUM_THREADS");
  f.env_openblas = read("OPENBLAS_NUM_THREADS");
  f.slurm_cpus_per_task = read("SLURM_CPUS_PER_TASK");

  using GetInt = int (*)();
  using GetStr = char* (*)();
  if (auto parallel = openblas_symbol<GetInt>("openblas_get_parallel")) {
    // 0: sequential build, 1: its own pthread pool, 2: OpenMP.
    const int mode = parallel();
    f.blas = mode == 1 ? BlasKind::kOpenBlasPthread : mode == 2 ? BlasKind::kOpenBlasOpenMp : BlasKind::kSequential;
    if (auto config = openblas_symbol<GetStr>("openblas_get_config")) f.blas_config = config();
  }
  return f;
}

void apply_blas_threads(const ThreadPlan& plan) {
  if (!plan.blas) return;
  using SetInt = void (*)(int);
  if (auto set = openblas_symbol<SetInt>("openblas_set_num_threads")) set(*plan.blas);
}

}  // namespace fabkit::trainer
