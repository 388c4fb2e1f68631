// Who did not arrive: the judge behind fabtrain's collective-timeout error. Pure (no c10d): what
// each rank posted to the rendezvous store in, one sentence out.
//
// Every rank numbers its collectives (all ranks issue the same ones in the same order). A rank
// whose wait blocks for a while posts "<number> <op>" under progress/<rank>; a rank that times
// out posts too and reads every rank's post. A rank that posted nothing, or an older number, has
// not reached the collective: it is stopped, dead, or busy (or hung) outside the collectives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fabkit::trainer {

struct ProgressPost {
  uint64_t seq = 0;  // the collective's number on its rank
  std::string op;    // "allreduce", "barrier", ...
};

// "<seq> <op>" <-> ProgressPost; nullopt for text that is not such a post.
std::string format_progress(const ProgressPost& p);
std::optional<ProgressPost> parse_progress(const std::string& text);

struct PeerView {
  std::optional<ProgressPost> post;  // nothing posted (or the store did not answer)
  std::string host;                  // "node7 pid 4242"; empty when unknown
};

struct Laggards {
  std::vector<int> silent;   // posted nothing: never blocked in a collective long enough, or gone
  std::vector<int> behind;   // last seen at an earlier collective
  std::vector<int> waiting;  // at this collective (or later) like this rank
  std::string text;          // the sentence for the error; names ranks and hosts
};

// me: this rank, at collective `mine`. peers[r]: what rank r posted (peers[me] is ignored).
Laggards judge_laggards(int me, const ProgressPost& mine, const std::vector<PeerView>& peers);

}  // namespace fabkit::trainer
