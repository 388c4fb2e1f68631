// Who did not arrive: the judge behind fabtrain's collective-timeout error. Pure (no c10d): what
// each rank posted to the rendezvous store in, one sentence out.
//
// Every rank numbers its collectives (all ranks issue the same ones in the same order). A rank
// whose wait blocks for a while posts "<number> waiting <op>" under progress/<rank>; a rank that
// times out posts "<number> timed-out <op>" and reads every rank's post. A rank that posted
// nothing, or an older number, has not reached the collective: it is stopped, dead, or busy (or
// hung) outside the collectives. A rank that reached it but did not time out on it as well went
// quiet there (stopped or hung after arriving), unless it only arrived later.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fabkit::trainer {

struct ProgressPost {
  uint64_t seq = 0;        // the collective's number on its rank
  std::string op;          // "allreduce", "barrier", ...
  bool timed_out = false;  // posted at its deadline (else: while its wait was blocking)
};

// "<seq> waiting|timed-out <op>" <-> ProgressPost; nullopt for text that is not such a post.
std::string format_progress(const ProgressPost& p);
std::optional<ProgressPost> parse_progress(const std::string& text);

struct PeerView {
  std::optional<ProgressPost> post;  // nothing posted (or the store did not answer)
  std::string host;                  // "node7 pid 4242"; empty when unknown
};

struct Laggards {
  std::vector<int> silent;   // posted nothing: never blocked in a collective long enough, or gone
  std::vector<int> behind;   // last seen at an earlier collective
  std::vector<int> quiet;    // waiting at this collective, but it did not time out there in time
  std::vector<int> waiting;  // timed out at this collective like this rank (or is past it)
  std::string text;          // the sentence for the error; names ranks and hosts
};

// me: this rank, at collective `mine`. peers[r]: what rank r posted (peers[me] is ignored),
// read for up to grace_ms after this rank timed out. Ranks that never reached the collective are
// the ones named; where every rank reached it, the quiet ones are; where all timed out on it, the
// network between them is.
Laggards judge_laggards(int me, const ProgressPost& mine, const std::vector<PeerView>& peers,
                        int64_t grace_ms);

}  // namespace fabkit::trainer
