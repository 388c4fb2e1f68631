#include "trainer/app/train_log.h"

#include <sys/resource.h>

#include <cstdio>
#include <iostream>

#include "common/errors.h"

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
  char buf[400];
  std::snprintf(buf, sizeof(buf),
                "step %lld/%lld  loss %.5f  lr %.3e  grad_norm %.4f  tokens/s %.0f  step %.1f ms  "
                "state/rank %.2f MiB  rss %.0f MiB",
                m["step"].get<long long>(), m["total_steps"].get<long long>(), m["loss"].get<double>(),
                m["lr"].get<double>(), m["grad_norm"].get<double>(), m["tokens_per_s"].get<double>(),
                m["step_time_ms"].get<double>(), m["state_bytes_per_rank"].get<double>() / (1 << 20),
                m["max_rss_bytes"].get<double>() / (1 << 20));
  std::cerr << "[fabtrain] " << buf << std::endl;
  record(m);
}

void TrainLog::eval(const Json& m) {
  if (rank_ != 0) return;
  char buf[200];
  std::snprintf(buf, sizeof(buf), "eval at step %lld  valid_loss %.5f  perplexity %.3f", m["step"].get<long long>(),
                m["valid_loss"].get<double>(), m["valid_perplexity"].get<double>());
  before_line();
  std::cerr << "[fabtrain] " << buf << std::endl;
  record(m);
}

int64_t max_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace fabkit::trainer
