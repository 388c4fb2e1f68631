// The seam between long measurements and whoever shows their progress. Gatherers (the pair and
// group controllers, the cluster runner, the node probe) report what they measure through a
// ProgressSink they are given; the CLI decides what draws it (reports/term's stderr renderer on a
// terminal) and passes it in, so gather code never includes reports/. The default sink does
// nothing: agents, library users and tests get no output unless they ask for it.
#pragma once

#include <cstdint>
#include <string>

namespace fabkit {

// Implementations must accept calls from several threads (the cluster runner reports from its
// worker threads).
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  // A measurement starts: label says what is measured ("pair: tcp bandwidth eth1->eth1");
  // total_units is the amount of work when known (sizes of a sweep, pairs of a round), else 0.
  // A begin while another measurement is open replaces it.
  virtual void begin(const std::string& label, uint64_t total_units) = 0;
  // units more are done. A non-empty label replaces the measurement's label (the size now running).
  virtual void advance(uint64_t units, const std::string& label = "") = 0;
  // The amount of work became known mid-measurement (an agent's first progress note): the
  // spinner becomes a bar; the measurement keeps its start time.
  virtual void set_total(uint64_t total_units) = 0;
  // The measurement is over (finished or failed).
  virtual void end() = 0;
};

// The sink that shows nothing (one shared instance).
ProgressSink& no_progress();

// begin() now, end() when the scope is left, by return or by exception. sink may be null (no-op).
class ProgressScope {
 public:
  ProgressScope(ProgressSink* sink, const std::string& label, uint64_t total_units = 0)
      : sink_(sink ? sink : &no_progress()) {
    sink_->begin(label, total_units);
  }
  ~ProgressScope() { sink_->end(); }
  ProgressScope(const ProgressScope&) = delete;
  ProgressScope& operator=(const ProgressScope&) = delete;

  void advance(uint64_t units = 1, const std::string& label = "") { sink_->advance(units, label); }
  void set_total(uint64_t total_units) { sink_->set_total(total_units); }

 private:
  ProgressSink* sink_;
};

}  // namespace fabkit
