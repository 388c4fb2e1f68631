// The wire tests' one question about a failure: which named WireError did it throw.
#pragma once

#include <gtest/gtest.h>

#include <functional>

#include "fabric/wire/wire_error.h"

namespace fabkit::wire {

// The kind of the WireError fn throws; a test failure (and kIo) when it throws none.
inline WireErrorKind kind_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const WireError& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no WireError thrown";
  return WireErrorKind::kIo;
}

}  // namespace fabkit::wire
