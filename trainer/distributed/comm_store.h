// The rendezvous store every multi-rank backend (Gloo, NCCL) starts from. Internal to the comm
// library: it includes c10d, which only the backends' .cc files may see.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "trainer/distributed/comm.h"

namespace fabkit::trainer {

// A c10d::TCPStore at master_addr:master_port (rank 0 serves it unless torchrun's agent already
// does), under options.store_prefix. Throws what c10d throws; the backends name the stage.
c10::intrusive_ptr<c10d::Store> make_rendezvous_store(const CommOptions& options);

}  // namespace fabkit::trainer
