#include "trainer/app/train_log.h"

#include <sys/resource.h>

#include <iostream>

#include "common/errors.h"
#include "reports/text/train_text.h"

namespace fabkit::trainer {

void TrainLog::open_metrics(const std::filesystem::path& file) {
  if (rank_ != 0) return;
  metrics_.open(file, std::ios::app);
  if (!metrics_) throw SysErrorException({"open", errno, file.string()});
}

void TrainLog::info(const std::string& line) const {
  if (rank_ != 0) return;
  before_line();
  std::cerr << "[fabtrain] " << line << std::endl;
}

void TrainLog::warn(const std::string& line) const {
  before_line();
  std::cerr << "[fabtrain rank " << rank_ << "] warning: " << line << std::endl;
}

void TrainLog::record(const Json& m) {
  if (rank_ != 0 || !metrics_.is_open()) return;
  metrics_ << m.dump() << "\n";
  metrics_.flush();
}

void TrainLog::step(const Json& m) {
  if (rank_ != 0) return;
  if (progress_ && progress_->is_tty()) {
    record(m);
    return;
  }
  std::cerr << "[fabtrain] " << reports::text::format_step_line(m) << std::endl;
  record(m);
}

void TrainLog::eval(const Json& m) {
  if (rank_ != 0) return;
  before_line();
  std::cerr << "[fabtrain] " << reports::text::format_eval_line(m) << std::endl;
  record(m);
}

int64_t max_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace fabkit::trainer
