#include "trainer/distributed/comm_progress.h"

#include <sstream>

namespace fabkit::trainer {

std::string format_progress(const ProgressPost& p) { return std::to_string(p.seq) + " " + p.op; }

std::optional<ProgressPost> parse_progress(const std::string& text) {
  const auto space = text.find(' ');
  if (space == 0 || space == std::string::npos) return std::nullopt;
  ProgressPost p;
  try {
    size_t used = 0;
    p.seq = std::stoull(text.substr(0, space), &used);
    if (used != space) return std::nullopt;
  } catch (const std::logic_error&) {
    return std::nullopt;
  }
  p.op = text.substr(space + 1);
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

Laggards judge_laggards(int me, const ProgressPost& mine, const std::vector<PeerView>& peers) {
  Laggards l;
  std::ostringstream text;
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
    } else {
      l.waiting.push_back(r);
    }
  }
  if (parts.empty()) {
    // Everyone reached this collective and it still did not complete: the transport failed.
    text << "every rank reached collective #" << mine.seq << " (" << mine.op
         << ") but it did not complete: the network between the ranks dropped or stalled";
  } else {
    for (size_t i = 0; i < parts.size(); ++i) text << (i ? "; " : "") << parts[i];
    if (!l.waiting.empty())
      text << "; rank(s) " << list(l.waiting) << " were waiting at this collective too";
  }
  l.text = text.str();
  return l;
}

}  // namespace fabkit::trainer
