#include "reports/text/train_text.h"

#include <cstdio>

namespace fabkit::reports::text {

std::string format_step_line(const Json& m) {
  char buf[400];
  std::snprintf(buf, sizeof(buf),
                "step %lld/%lld  loss %.5f  lr %.3e  grad_norm %.4f  tokens/s %.0f  step %.1f ms  "
                "state/rank %.2f MiB  rss %.0f MiB",
                m["step"].get<long long>(), m["total_steps"].get<long long>(),
                m["loss"].get<double>(), m["lr"].get<double>(), m["grad_norm"].get<double>(),
                m["tokens_per_s"].get<double>(), m["step_time_ms"].get<double>(),
                m["state_bytes_per_rank"].get<double>() / (1 << 20),
                m["max_rss_bytes"].get<double>() / (1 << 20));
  return buf;
}

std::string format_eval_line(const Json& m) {
  char buf[200];
  std::snprintf(buf, sizeof(buf), "eval at step %lld  valid_loss %.5f  perplexity %.3f",
                m["step"].get<long long>(), m["valid_loss"].get<double>(),
                m["valid_perplexity"].get<double>());
  return buf;
}

}  // namespace fabkit::reports::text
