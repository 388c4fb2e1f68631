#include "common/progress.h"

namespace fabkit {
namespace {

class NoProgress : public ProgressSink {
 public:
  void begin(const std::string&, uint64_t) override {}
  void advance(uint64_t, const std::string&) override {}
  void set_total(uint64_t) override {}
  void end() override {}
};

}  // namespace

ProgressSink& no_progress() {
  static NoProgress sink;
  return sink;
}

}  // namespace fabkit
