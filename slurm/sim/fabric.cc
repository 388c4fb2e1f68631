#include "slurm/sim/fabric.h"

#include <algorithm>
#include <stdexcept>

namespace fabkit::slurm::sim {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

uint64_t Rng::next() {
  const uint64_t out = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return out;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

int Rng::below(int n) { return static_cast<int>(uniform() * n); }

Rng Rng::fork(uint64_t stream) { return Rng(next() ^ (stream * 0xd1b54a32d192ed03ULL)); }

FabricTopology fat_tree(int nodes, int nodes_per_leaf, int spines, int rails) {
  if (nodes < 1 || nodes_per_leaf < 1 || spines < 1 || rails < 1)
    throw std::invalid_argument("fat_tree: nodes, nodes per leaf, spines and rails must be >= 1 (" +
                                std::to_string(nodes) + ", " + std::to_string(nodes_per_leaf) +
                                ", " + std::to_string(spines) + ", " + std::to_string(rails) + ")");
  FabricTopology t;
  t.nodes = nodes;
  t.spines = spines;
  t.rails = rails;
  for (int i = 0; i < nodes; ++i) t.leaf_of.push_back(i / nodes_per_leaf);
  for (int l = 0; l <= (nodes - 1) / nodes_per_leaf; ++l)
    t.leaf_names.push_back("leaf" + std::to_string(l));
  return t;
}

const char* to_string(FaultKind k) {
  switch (k) {
    case FaultKind::kNone:
      return "none";
    case FaultKind::kSlowLink:
      return "slow_link";
    case FaultKind::kFlappingLink:
      return "flapping_link";
    case FaultKind::kSlowNic:
      return "slow_nic";
    case FaultKind::kBadSpinePort:
      return "bad_spine_port";
  }
  return "?";
}

const std::vector<FaultKind>& all_fault_kinds() {
  static const std::vector<FaultKind> k = {FaultKind::kNone, FaultKind::kSlowLink,
                                           FaultKind::kFlappingLink, FaultKind::kSlowNic,
                                           FaultKind::kBadSpinePort};
  return k;
}

std::optional<FaultKind> fault_kind_from_string(const std::string& text) {
  for (FaultKind k : all_fault_kinds())
    if (text == to_string(k)) return k;
  return std::nullopt;
}

Fault place_fault(FaultKind kind, const FabricTopology& t, Rng& rng, double factor, double p_slow) {
  Fault f;
  f.kind = kind;
  f.factor = factor;
  f.p_slow = p_slow;
  switch (kind) {
    case FaultKind::kNone:
      break;
    case FaultKind::kSlowLink:
    case FaultKind::kFlappingLink: {
      if (t.nodes < 2) throw std::invalid_argument("a link fault needs 2 or more nodes");
      int a = rng.below(t.nodes), b = rng.below(t.nodes - 1);
      if (b >= a) ++b;
      f.a = std::min(a, b);
      f.b = std::max(a, b);
      break;
    }
    case FaultKind::kSlowNic:
      f.a = rng.below(t.nodes);
      f.rail = rng.below(t.rails);
      break;
    case FaultKind::kBadSpinePort:
      if (t.spines < 1 || t.leaves() < 2)
        throw std::invalid_argument("a bad spine port needs 2 or more leaves and known spines (" +
                                    std::to_string(t.leaves()) + " leaves, " +
                                    std::to_string(t.spines) + " spines)");
      f.a = rng.below(t.leaves());
      f.b = rng.below(t.spines);
      break;
  }
  return f;
}

Fabric::Fabric(FabricTopology t, std::vector<double> healthy, Fault fault)
    : t_(std::move(t)), healthy_(std::move(healthy)), fault_(fault) {
  if (healthy_.empty()) throw std::invalid_argument("Fabric: no healthy pair figure to draw from");
  for (double g : healthy_)
    if (!(g > 0)) throw std::invalid_argument("Fabric: a healthy pair figure is not > 0");
  if (!t_.leaf_of.empty() && static_cast<int>(t_.leaf_of.size()) != t_.nodes)
    throw std::invalid_argument("Fabric: the topology's leaf_of does not have one entry per node");
  median_ = median(healthy_);
}

double Fabric::path_capacity(int a, int b, int rail, Rng& rng) const {
  const Fault& f = fault_;
  const int lo = std::min(a, b), hi = std::max(a, b);
  switch (f.kind) {
    case FaultKind::kNone:
      return 1;
    case FaultKind::kSlowLink:
      return lo == f.a && hi == f.b ? f.factor : 1;
    case FaultKind::kFlappingLink:
      if (lo != f.a || hi != f.b) return 1;
      return rng.uniform() < f.p_slow ? f.factor : 1;
    case FaultKind::kSlowNic:
      return (a == f.a || b == f.a) && rail == f.rail ? f.factor : 1;
    case FaultKind::kBadSpinePort:
      for (const SpinePath& p : pair_spine_paths(t_, a, b))
        if (p.leaf == f.a && p.spine == f.b) return f.factor;
      return 1;
  }
  return 1;
}

bool Fabric::touched(int a, int b) const {
  const Fault& f = fault_;
  const int lo = std::min(a, b), hi = std::max(a, b);
  switch (f.kind) {
    case FaultKind::kNone:
      return false;
    case FaultKind::kSlowLink:
    case FaultKind::kFlappingLink:
      return lo == f.a && hi == f.b;
    case FaultKind::kSlowNic:
      return a == f.a || b == f.a;
    case FaultKind::kBadSpinePort:
      for (const SpinePath& p : pair_spine_paths(t_, a, b))
        if (p.leaf == f.a && p.spine == f.b) return true;
      return false;
  }
  return false;
}

bool Fabric::node_touched(int x) const {
  int hit = 0;
  for (int y = 0; y < t_.nodes; ++y)
    if (y != x && touched(x, y)) ++hit;
  return 2 * hit > t_.nodes - 1;
}

double Fabric::draw(Rng& rng) const {
  return healthy_[static_cast<size_t>(rng.below(static_cast<int>(healthy_.size())))];
}

double Fabric::link_gbit_s(int a, int b, Rng& rng) const {
  double worst = 0;
  for (int r = 0; r < t_.rails; ++r) {
    double g = draw(rng) * path_capacity(a, b, r, rng);
    if (r == 0 || g < worst) worst = g;
  }
  return worst;
}

PairMeasurement Fabric::measure_pair(int a, int b, Rng& rng) const {
  PairMeasurement m;
  m.a = std::min(a, b);
  m.b = std::max(a, b);
  m.ok = true;
  m.gbit_s = link_gbit_s(a, b, rng);
  m.source = "simulated";
  return m;
}

}  // namespace fabkit::slurm::sim
