#include "trainer/monitor/event_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>

#include "common/errors.h"

namespace fabkit::trainer::monitor {
namespace fs = std::filesystem;

std::string event_file_name(int64_t unix_secs, const std::string& host, long pid) {
  std::string h = host.empty() ? "localhost" : host;
  for (char& c : h)
    if (c == '/') c = '_';
  return "events.out.tfevents." + std::to_string(unix_secs) + "." + h + "." + std::to_string(pid);
}

double wall_time_now_s() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count() / 1e6;
}

EventWriter EventWriter::create_in(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw SysErrorException({"mkdir", ec.value(), dir.string()});
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const std::string base = event_file_name(std::time(nullptr), host, static_cast<long>(::getpid()));
  // O_EXCL: two writers (an eval writer beside the train writer, a restarted run in the same
  // second) never interleave records in one file.
  for (int n = 0; n < 1000; ++n) {
    const fs::path p = dir / (n == 0 ? base : base + "." + std::to_string(n));
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) throw SysErrorException({"open", errno, p.string()});
    EventWriter w(UniqueFd(fd), p);
    w.write_record(encode_file_version_event(wall_time_now_s()));
    return w;
  }
  throw SysErrorException({"open", EEXIST, (dir / (base + ".*")).string()});
}

EventWriter EventWriter::create_file(const fs::path& file) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw SysErrorException({"open", errno, file.string()});
  EventWriter w(UniqueFd(fd), file);
  w.write_record(encode_file_version_event(wall_time_now_s()));
  return w;
}

void EventWriter::write_record(const std::string& event) {
  const std::string record = frame_tfrecord(event);
  size_t done = 0;
  while (done < record.size()) {
    ssize_t n = ::write(fd_.get(), record.data() + done, record.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SysErrorException({"write", errno, path_.string()});
    if (n == 0) throw SysErrorException({"write", EIO, path_.string()});
    done += static_cast<size_t>(n);
  }
}

void EventWriter::write_scalars(int64_t step, const std::vector<Scalar>& values) {
  write_record(encode_scalars_event(wall_time_now_s(), step, values));
}

void EventWriter::write_step(int64_t step, const StepScalars& s) {
  std::vector<Scalar> v{{kTagLoss, static_cast<float>(s.loss)},
                        {kTagLr, static_cast<float>(s.lr)},
                        {kTagTokensPerS, static_cast<float>(s.tokens_per_s)},
                        {kTagGradNorm, static_cast<float>(s.grad_norm)}};
  if (s.memory_bytes >= 0)
    v.push_back({kTagMemoryMib, static_cast<float>(s.memory_bytes / (1 << 20))});
  write_scalars(step, v);
}

void EventWriter::write_eval(int64_t step, double eval_loss) {
  write_scalars(step, {{kTagEvalLoss, static_cast<float>(eval_loss)}});
}

void EventWriter::write_text(int64_t step, const std::string& tag, const std::string& text) {
  write_record(encode_text_event(wall_time_now_s(), step, tag, text));
}

}  // namespace fabkit::trainer::monitor
