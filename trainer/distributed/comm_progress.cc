#include "trainer/distributed/comm_progress.h"

#include <sstream>

namespace fabkit::trainer {

namespace {
constexpr const char* kWaiting = "waiting";
constexpr const char* kTimedOut = "timed-out";
}  // namespace

std::string format_progress(const ProgressPost& p) {
  return std::to_string(p.seq) + " " + (p.timed_out ? kTimedOut : kWaiting) + " " + p.op;
}

std::optional<ProgressPost> parse_progress(const std::string& text) {
  const auto first = text.find(' ');
  if (first == 0 || first == std::string::npos) return std::nullopt;
  const auto second = text.find(' ', first + 1);
  if (second == std::string::npos || second + 1 == text.size()) return std::nullopt;
  ProgressPost p;
  try {
    size_t used = 0;
    p.seq = std::stoull(text.substr(0, first), &used);
    if (used != first || text[0] == '-' || text[0] == '+') return std::nullopt;
  } catch (const std::logic_error&) {
    return std::nullopt;
  }
  const std::string state = text.substr(first + 1, second - first - 1);
  if (state == kTimedOut) {
    p.timed_out = true;
  } else if (state != kWaiting) {
    return std::nullopt;
  }
  p.op = text.substr(second + 1);
  return p;
}

namespace {

std::string who(int r, const PeerView& v) {
  return "rank " + std::to_string(r) + " (" + (v.host.empty() ? "host unknown" : v.host) + ")";
}

std::string list(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

Laggards judge_laggards(int me, const ProgressPost& mine, const std::vector<PeerView>& peers,
                        int64_t grace_ms) {
  Laggards l;
  std::vector<std::string> parts;
  for (int r = 0; r < static_cast<int>(peers.size()); ++r) {
    if (r == me) continue;
    const PeerView& v = peers[static_cast<size_t>(r)];
    if (!v.post) {
      l.silent.push_back(r);
      parts.push_back(who(r, v) +
                      " did not arrive and did not answer (stopped, dead, or busy or "
                      "hung outside the collectives)");
    } else if (v.post->seq < mine.seq) {
      l.behind.push_back(r);
      parts.push_back(who(r, v) + " did not arrive: last seen waiting at collective #" +
                      std::to_string(v.post->seq) + " (" + v.post->op +
                      ") and silent since (stopped, dead, or busy or hung outside the "
                      "collectives)");
    } else if (v.post->seq == mine.seq && !v.post->timed_out) {
      l.quiet.push_back(r);
    } else {
      l.waiting.push_back(r);
    }
  }
  const std::string quiet_since = "reached this collective but did not time out on it within " +
                                  std::to_string(grace_ms) + " ms of this rank";
  std::ostringstream text;
  if (!parts.empty()) {
    for (size_t i = 0; i < parts.size(); ++i) text << (i ? "; " : "") << parts[i];
    // Those that reached it are not the cause here: they may only have a later deadline.
    if (!l.quiet.empty()) text << "; rank(s) " << list(l.quiet) << " " << quiet_since;
    if (!l.waiting.empty())
      text << "; rank(s) " << list(l.waiting) << " were waiting at this collective too";
  } else if (!l.quiet.empty()) {
    // Everyone reached it; those that then said nothing more are the likeliest cause.
    for (size_t i = 0; i < l.quiet.size(); ++i) {
      const int r = l.quiet[i];
      text << (i ? "; " : "") << who(r, peers[static_cast<size_t>(r)]) << " " << quiet_since
           << " (stopped or hung after arriving, or it arrived that much later)";
    }
    text << "; every rank reached collective #" << mine.seq << " (" << mine.op << ")";
    if (!l.waiting.empty()) text << ", rank(s) " << list(l.waiting) << " timed out on it too";
  } else {
    // Everyone reached this collective and timed out on it: the transport failed.
    text << "every rank reached collective #" << mine.seq << " (" << mine.op
         << ") and timed out on it: the network between the ranks dropped or stalled";
  }
  l.text = text.str();
  return l;
}

}  // namespace fabkit::trainer
