#include "trainer/distributed/device_choice.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "common/errors.h"

namespace fabkit::trainer {
namespace {

// NCCL's path levels, nearest first; an unknown level sorts after all of them.
int level_rank(const std::optional<std::string>& level) {
  static const char* kOrder[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};
  if (!level) return 99;
  for (int i = 0; i < 5; ++i) {
    if (*level == kOrder[i]) return i;
  }
  return 98;
}

}  // namespace

std::string normalize_bus_id(const std::string& bus_id) {
  std::string s;
  for (char c : bus_id) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto colon = s.find(':');
  if (colon == std::string::npos) return s;
  if (s.find(':', colon + 1) == std::string::npos) return "0000:" + s;  // "3b:00.0": no domain
  std::string domain = s.substr(0, colon);
  if (domain.size() > 4) domain = domain.substr(domain.size() - 4);
  while (domain.size() < 4) domain = "0" + domain;
  return domain + s.substr(colon);
}

std::vector<std::string> cuda_visible_entries(const std::string& value) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= value.size()) {
    size_t comma = value.find(',', i);
    if (comma == std::string::npos) comma = value.size();
    std::string e = value.substr(i, comma - i);
    const auto b = e.find_first_not_of(" \t"), l = e.find_last_not_of(" \t");
    e = b == std::string::npos ? "" : e.substr(b, l - b + 1);
    if (!e.empty()) out.push_back(e);
    i = comma + 1;
  }
  return out;
}

namespace {

// "'3' (device index 3)", "'GPU-8f3e' (a GPU by UUID)", "'MIG-...' (a MIG device)".
std::string describe_entry(const std::string& e) {
  if (e.rfind("MIG-", 0) == 0) return "'" + e + "' (a MIG device)";
  if (e.rfind("GPU-", 0) == 0) return "'" + e + "' (a GPU by UUID)";
  return "'" + e + "' (device index " + e + ")";
}

std::string visible_text(const std::optional<std::string>& cvd) {
  return cvd ? "CUDA_VISIBLE_DEVICES='" + *cvd + "'" : std::string("CUDA_VISIBLE_DEVICES unset");
}

}  // namespace

DeviceChoice choose_cuda_device(int local_rank, int local_world_size,
                                const std::vector<VisibleGpu>& visible,
                                const std::vector<GpuNicLocality>& locality,
                                const std::optional<std::string>& cvd) {
  const int n = static_cast<int>(visible.size());
  const std::vector<std::string> listed =
      cvd ? cuda_visible_entries(*cvd) : std::vector<std::string>{};
  if (cvd && static_cast<int>(listed.size()) > n) {
    // CUDA enumerates the entries in order and stops at the first it cannot resolve, so a typo
    // (or a UUID of another node's GPU) silently shrinks the set: a rank would pick the wrong GPU.
    throw UsageError(
        visible_text(cvd) + " lists " + std::to_string(listed.size()) + " devices but CUDA sees " +
        std::to_string(n) + ": entry " + describe_entry(listed[static_cast<size_t>(n)]) +
        " did not resolve on this node (CUDA hides it and every entry after it) -- list indices "
        "or UUIDs that `nvidia-smi -L` shows here, or leave the variable to Slurm "
        "(--gpus-per-task, "
        "--gpu-bind)");
  }
  if (n == 1 && local_world_size > 1) {
    // One GPU per task: Slurm's --gpus-per-task=1 / --gpu-bind narrow CUDA_VISIBLE_DEVICES per
    // task, a cgroup-constrained GRES hides the other devices (then often CUDA_VISIBLE_DEVICES=0
    // in every task, each meaning a different physical GPU).
    const std::string how =
        cvd ? visible_text(cvd) + (listed.empty() ? "" : " = " + describe_entry(listed.front()))
            : "CUDA_VISIBLE_DEVICES unset, the other GPUs hidden (device cgroup)";
    return {visible[0].index, normalize_bus_id(visible[0].bus_id),
            "the one GPU this task sees (" + how + "), local rank " + std::to_string(local_rank) +
                " of " + std::to_string(local_world_size) +
                ": one GPU per task (srun --gpus-per-task=1, --gpu-bind, a constrained GRES); "
                "each local rank must see a different one, or NCCL stops with \"Duplicate GPU "
                "detected\""};
  }
  if (local_world_size > n || local_rank >= n) {
    throw UsageError(
        std::to_string(local_world_size) + " local ranks on this node but " + std::to_string(n) +
        " visible CUDA device(s) (" + visible_text(cvd) +
        "): each rank needs a GPU of its own and with more than one visible the rank cannot tell "
        "which of them are its own -- give each task one GPU (srun --gpus-per-task=1 or "
        "--gpu-bind=single:1), start at most " +
        std::to_string(n) +
        " ranks per node (--nproc, srun --ntasks-per-node), or train on CPU (--device cpu)");
  }
  auto plain = [&](const std::string& why) {
    return DeviceChoice{visible[local_rank].index, normalize_bus_id(visible[local_rank].bus_id),
                        why};
  };
  if (local_world_size == n)
    return plain("LOCAL_RANK " + std::to_string(local_rank) + ": one rank per visible GPU");
  std::map<std::string, const GpuNicLocality*> by_bus;
  for (const auto& l : locality) by_bus[normalize_bus_id(l.gpu_bus_id)] = &l;
  bool any_known = false;
  for (const auto& g : visible) any_known |= by_bus.count(normalize_bus_id(g.bus_id)) > 0;
  if (!any_known) {
    return plain("LOCAL_RANK " + std::to_string(local_rank) +
                 ": the profile has no GPU<->NIC locality for this host's visible GPUs");
  }

  // Per NIC, its GPUs nearest first; GPUs without a known NIC form one group of their own, last.
  struct Candidate {
    int level;
    std::string bus;
    int index;
    std::string nic;
    std::string level_name;
  };
  std::map<std::string, std::vector<Candidate>> groups;
  for (const auto& g : visible) {
    const std::string bus = normalize_bus_id(g.bus_id);
    auto it = by_bus.find(bus);
    const GpuNicLocality* l = it == by_bus.end() ? nullptr : it->second;
    const std::string nic = l && l->nearest_nic ? *l->nearest_nic : "";
    groups[nic].push_back({l ? level_rank(l->path_level) : 99, bus, g.index, nic,
                           l && l->path_level ? *l->path_level : "unknown"});
  }
  std::vector<std::vector<Candidate>> order;
  for (auto& [nic, list] : groups) {
    std::sort(list.begin(), list.end(), [](const Candidate& a, const Candidate& b) {
      return a.level != b.level ? a.level < b.level : a.bus < b.bus;
    });
    order.push_back(list);
  }
  // NICs whose best GPU is nearest go first; the no-NIC group goes last.
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    const bool a_none = a.front().nic.empty(), b_none = b.front().nic.empty();
    if (a_none != b_none) return b_none;
    return a.front().level < b.front().level;
  });
  std::vector<Candidate> picked;
  for (size_t round = 0; static_cast<int>(picked.size()) < local_world_size; ++round) {
    for (const auto& list : order) {
      if (round < list.size() && static_cast<int>(picked.size()) < local_world_size)
        picked.push_back(list[round]);
    }
  }
  // Local ranks take the picked GPUs in CUDA order, so rank order follows device order.
  std::sort(picked.begin(), picked.end(),
            [](const Candidate& a, const Candidate& b) { return a.index < b.index; });
  const Candidate& c = picked[static_cast<size_t>(local_rank)];
  return {c.index, c.bus,
          "GPU " + c.bus +
              (c.nic.empty() ? std::string(" (no NIC known)")
                             : " (" + c.level_name + " to " + c.nic + ")") +
              ": " + std::to_string(local_world_size) + " local rank(s) on " + std::to_string(n) +
              " GPUs, spread over the NICs' nearest GPUs (profile locality)"};
}

}  // namespace fabkit::trainer
