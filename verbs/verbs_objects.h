// RAII owners for verbs handles. Declare them in creation order (context, PD, MR, CQ, QP) as
// members of one struct: C++ destroys members in reverse, which is the order verbs requires
// (a QP before its CQ, an MR before its PD, everything before the context).
#pragma once

#include <utility>

#include "verbs/verbs_api.h"

namespace fabkit::verbs {

enum class ObjectKind { kContext, kPd, kMr, kCq, kQp };

template <ObjectKind K>
class Owned {
 public:
  Owned() = default;
  Owned(VerbsApi* api, Handle h) : api_(api), handle_(h) {}
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&& o) noexcept : api_(o.api_), handle_(std::exchange(o.handle_, 0)) {}
  Owned& operator=(Owned&& o) noexcept {
    if (this != &o) {
      reset();
      api_ = o.api_;
      handle_ = std::exchange(o.handle_, 0);
    }
    return *this;
  }
  ~Owned() { reset(); }

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != 0; }

  void reset() {
    if (!handle_ || !api_) return;
    Handle h = std::exchange(handle_, 0);
    // Teardown errors cannot be acted on here (the objects are going away either way).
    switch (K) {
      case ObjectKind::kContext: api_->close_device(h); break;
      case ObjectKind::kPd: api_->dealloc_pd(h); break;
      case ObjectKind::kMr: api_->dereg_mr(h); break;
      case ObjectKind::kCq: api_->destroy_cq(h); break;
      case ObjectKind::kQp: api_->destroy_qp(h); break;
    }
  }

 private:
  VerbsApi* api_ = nullptr;
  Handle handle_ = 0;
};

using Context = Owned<ObjectKind::kContext>;
using ProtectionDomain = Owned<ObjectKind::kPd>;
using MrOwner = Owned<ObjectKind::kMr>;
using CompletionQueue = Owned<ObjectKind::kCq>;
using QueuePair = Owned<ObjectKind::kQp>;

}  // namespace fabkit::verbs
