// NcclLogReader (nccl_log.h): splits pieces of a log into lines for the parser, keeping only the
// line not yet ended between pieces.
#include <algorithm>

#include "fabric/nccl_log/nccl_log.h"
#include "fabric/nccl_log/nccl_log_parser.h"

namespace fabkit::nccl_log {

NcclLogReader::NcclLogReader() : parser_(std::make_unique<detail::Parser>()) {}
NcclLogReader::~NcclLogReader() = default;

void NcclLogReader::begin(const std::string& name) {
  end_input();
  parser_->begin(name);
  begun_ = true;
}

void NcclLogReader::feed(std::string_view piece) {
  if (!begun_) begin("");
  while (!piece.empty()) {
    const size_t nl = piece.find('\n');
    const std::string_view part = piece.substr(0, nl);
    if (partial_.empty() && nl != std::string_view::npos) {
      parser_->feed_line(part);  // the usual line, whole in this piece: no copy
    } else {
      // A longer line is skipped whole by the parser: one byte past the longest is enough to say
      // so, and a line without end (a stream of one byte) never fills memory.
      constexpr size_t kKept = detail::kMaxLineChars + 1;
      const size_t room = kKept - std::min(partial_.size(), kKept);
      partial_.append(part.substr(0, room));
      if (nl != std::string_view::npos) {
        parser_->feed_line(partial_);
        partial_.clear();
      }
    }
    if (nl == std::string_view::npos) break;
    piece.remove_prefix(nl + 1);
  }
}

// Text after the last newline is the input's last line, as in parse_nccl_logs.
void NcclLogReader::end_input() {
  if (!partial_.empty()) parser_->feed_line(partial_);
  partial_.clear();
}

NcclLogSummary NcclLogReader::finish() {
  end_input();
  return parser_->finish();
}

}  // namespace fabkit::nccl_log
