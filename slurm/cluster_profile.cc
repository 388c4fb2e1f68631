#include "slurm/cluster_profile.h"

#include "common/report_json.h"
#include "fabric/pair/pair_document.h"
#include "profile/builder.h"

namespace fabkit::slurm {

// The profile builder reads reports as `fabcheck profile` does from files: the pair runs' facts
// become the same pair report `fabcheck pair --json` prints.
profile::Profile cluster_profile(const ClusterFacts& f, const std::string& created_on) {
  std::vector<profile::BuildInput> inputs;
  for (const auto& n : f.nodes) {
    if (!n.ok) continue;
    Report rep = report_from_json(n.report);
    rep.hostname = n.host;
    inputs.push_back({rep, "fabcheck node on " + n.host, false});
  }
  for (const auto& p : f.pairs)
    inputs.push_back({pair::build_pair_report(p.facts),
                      "fabcheck pair " + f.hosts[p.a] + " " + f.hosts[p.b], false});
  profile::BuildOptions o;
  o.created_on = created_on;
  return profile::build_profile(inputs, o);
}

}  // namespace fabkit::slurm
