// How many threads each rank gives BLAS and ATen's intra-op pool.
//
// Debian's LibTorch calls the system BLAS (OpenBLAS pthread after scripts/setup) for every GEMM,
// and OpenBLAS keeps its OWN pthread pool beside ATen's OpenMP pool. Left at their defaults both
// pools take every core and both spin while idle: four busy threads on this 2-core machine, where a
// 1-rank run made 1174 tok/s, against 3545 tok/s with ATen at 1 thread and OpenBLAS at 2
// (bench/trainer, docs/fabtrain.md). GEMMs are most of a step and
// OpenBLAS parallelises them itself, so the plan gives the rank's cores to BLAS and runs ATen's
// element-wise ops on the calling thread. With a sequential BLAS (or OpenBLAS built on OpenMP,
// which shares ATen's pool) there is one pool, and it gets the cores.
//
// gather (affinity, which BLAS is loaded) -> plan (pure) -> apply (set the two pools).
#pragma once

#include <optional>
#include <string>

#include "common/environment.h"

namespace fabkit::trainer {

enum class BlasKind { kUnknown, kSequential, kOpenBlasPthread, kOpenBlasOpenMp };

struct ThreadFacts {
  int machine_cpus = 1;    // online CPUs
  int allowed_cpus = 1;    // this process's affinity mask (taskset, Slurm's cpuset, --cpu-bind)
  int local_ranks = 1;     // ranks of this job on this node
  BlasKind blas = BlasKind::kUnknown;
  std::string blas_config; // openblas_get_config(), for the log
  // Explicit requests, highest precedence first: fabtrain's flags, then the environment.
  std::optional<int> flag_intra_op, flag_blas;
  std::optional<int> env_omp, env_openblas;  // OMP_NUM_THREADS, OPENBLAS_NUM_THREADS
  std::optional<int> slurm_cpus_per_task;    // SLURM_CPUS_PER_TASK: the rank's share, given
};

struct ThreadPlan {
  int cores_per_rank = 1;
  int intra_op = 1;                 // ATen intra-op (OpenMP) threads
  std::optional<int> blas;          // OpenBLAS threads; nullopt: leave BLAS alone (not OpenBLAS)
  std::string reason;               // one line for the log
};

// Pure: the plan for these facts.
ThreadPlan plan_threads(const ThreadFacts& facts);

// Reads the affinity mask, the CPU count, the loaded BLAS and the environment's thread counts.
// A malformed count (OMP_NUM_THREADS=abc) is a UsageError naming the variable.
ThreadFacts gather_thread_facts(const Environment& env, int local_ranks, std::optional<int> flag_intra_op,
                                std::optional<int> flag_blas);

// The leading count of an OMP_NUM_THREADS-style value ("4", "4,2" for nested levels); nullopt and
// *error set when it is not a positive integer.
std::optional<int> parse_thread_count(const std::string& value, std::string* error);

// Sets OpenBLAS's pool (when the plan has a BLAS count and OpenBLAS is loaded). ATen's pool is
// set by the caller (torch::set_num_threads), so this file needs no torch headers.
void apply_blas_threads(const ThreadPlan& plan);

std::string to_string(BlasKind kind);

}  // namespace fabkit::trainer
