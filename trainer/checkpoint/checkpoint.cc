#include "trainer/checkpoint/checkpoint.h"

#include <fcntl.h>  // AT_FDCWD
#include <openssl/evp.h>
#include <stdio.h>  // renameat2, RENAME_EXCHANGE (glibc >= 2.28)
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/regular_file.h"
#include "common/json_read.h"
#include "trainer/checkpoint/shard_file.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

std::string step_dir_name(int64_t step) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "checkpoint-%08lld", static_cast<long long>(step));
  return buf;
}

// A step is written under this name beside its final directory (same filesystem, so publishing
// it is a rename), and only renamed into place once every file in it and its manifest are
// durable: a save that fails (a full disk) leaves an existing checkpoint of the same step as it
// was. The leading dot keeps list_checkpoints from ever counting it.
std::string staging_dir_name(int64_t step) { return "." + step_dir_name(step) + ".saving"; }
// Where an existing step waits while the new one is renamed into place, on filesystems without
// an atomic exchange (publish_step_dir).
std::string replaced_dir_name(int64_t step) { return "." + step_dir_name(step) + ".old"; }

std::string shard_name(int rank, int world) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "rank-%05d-of-%05d.bin", rank, world);
  return buf;
}


// One rank's shard as the manifest records it; gathered as raw bytes from every rank.
struct ShardDigest {
  char sha256_hex[64];
  uint64_t bytes;
};

// A manifest holds the model's config.json and one line per parameter: kilobytes, a few MB for
// the largest models. The limit keeps a hostile one (or /dev/zero in its place) from filling
// memory.
constexpr uint64_t kMaxManifestBytes = 64ull << 20;

Json read_manifest(int dir_fd, const fs::path& dir) {
  const std::string shown = (dir / "manifest.json").string();
  const UniqueFd fd = open_regular_beneath(dir_fd, "manifest.json", shown);
  const std::string text = read_all_capped(
      fd.get(), kMaxManifestBytes, shown, "a manifest lists the model's config and its parameters");
  try {
    return parse_json(text, shown);
  } catch (const JsonReadError& e) {
    throw UsageError(e.what());
  }
}

// shards[index] of a manifest, opened. A manifest is as trustworthy as whoever could write its
// directory, and `fabtrain export` runs as root: its "file" must name a regular file inside the
// checkpoint directory (no absolute path, no "..", no symlink leading out), never elsewhere.
struct ListedShard {
  UniqueFd fd;
  std::string shown;  // DIR/FILE, for messages
  uint64_t bytes = 0;
  std::string sha256;
};

ListedShard open_listed_shard(int dir_fd, const fs::path& dir, const Json& shards, size_t index) {
  const std::string field =
      (dir / "manifest.json").string() + ": shards[" + std::to_string(index) + "]";
  if (!shards.is_array() || index >= shards.size())
    throw UsageError(field + " is missing (field \"shards\" must list one entry per rank)");
  const Json& e = shards.at(index);
  if (!e.is_object() || !e.contains("file") || !e.at("file").is_string() || !e.contains("bytes") ||
      !e.at("bytes").is_number_unsigned() || !e.contains("sha256") || !e.at("sha256").is_string())
    throw UsageError(field + " must be {\"file\": name, \"bytes\": size, \"sha256\": hex}, found " +
                     e.dump().substr(0, 200));
  const std::string file = e.at("file").get<std::string>();
  if (auto why = why_not_beneath(file))
    throw UsageError(field + ".file \"" + file + "\" " + *why +
                     "; a shard is a file inside the checkpoint " + "directory " + dir.string());
  ListedShard s;
  s.shown = (dir / file).string();
  s.fd =
      open_regular_beneath(dir_fd, file, "checkpoint shard " + s.shown + " (" + field + ".file)");
  s.bytes = e.at("bytes").get<uint64_t>();
  s.sha256 = e.at("sha256").get<std::string>();
  return s;
}

Json layout_json(const std::vector<FlatShard>& shards) {
  Json units = Json::array();
  for (const auto& s : shards) {
    Json params = Json::array();
    for (const auto& p : s.params) params.push_back({{"name", p.name}, {"shape", p.shape}, {"offset", p.offset}});
    units.push_back({{"unit", s.unit}, {"total_numel", s.total_numel}, {"shard_numel", s.shard_numel}, {"params", params}});
  }
  return units;
}

Json state_json(const TrainState& t) {
  return {{"step", t.step}, {"epoch", t.epoch}, {"batch_in_epoch", t.batch_in_epoch},
          {"examples_in_epoch", t.examples_in_epoch}, {"seed", t.seed}, {"loss_scale", t.loss_scale},
          {"loss_scale_good_steps", t.loss_scale_good_steps}};
}

TrainState state_from_json(const Json& j) {
  TrainState t;
  t.step = j.at("step").get<int64_t>();
  t.epoch = j.at("epoch").get<int64_t>();
  t.batch_in_epoch = j.at("batch_in_epoch").get<int64_t>();
  t.examples_in_epoch = j.value("examples_in_epoch", int64_t{-1});
  t.seed = j.at("seed").get<uint64_t>();
  t.loss_scale = j.value("loss_scale", 0.0);
  t.loss_scale_good_steps = j.value("loss_scale_good_steps", int64_t{0});
  return t;
}

// The layout without the world-dependent shard size: what must match to reshard.
Json layout_for_resharding(Json units) {
  for (auto& u : units) u.erase("shard_numel");
  return units;
}

// "" when shards[index] has the size and SHA-256 its manifest entry records.
std::string check_shard_file(const fs::path& dir, const Json& shards, size_t index) {
  try {
    const UniqueFd dir_fd = open_directory(dir, "checkpoint " + dir.string());
    const ListedShard s = open_listed_shard(dir_fd.get(), dir, shards, index);
    const uint64_t size = open_file_size(s.fd.get(), s.shown);
    if (size != s.bytes) {
      return "shard " + s.shown + " has " + std::to_string(size) + " bytes, the manifest says " +
             std::to_string(s.bytes);
    }
    if (sha256_fd(s.fd.get(), s.shown) != s.sha256)
      return "shard " + s.shown + " fails its SHA-256";
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

ShardFileContents read_listed_shard(const fs::path& dir, const Json& shards, size_t index) {
  const UniqueFd dir_fd = open_directory(dir, "checkpoint " + dir.string());
  const ListedShard s = open_listed_shard(dir_fd.get(), dir, shards, index);
  return read_shard_file(s.fd.get(), s.shown);
}

// Why this checkpoint cannot be used by this rank, or "" when it can. Written by another world
// size, it is resharded: then the layout must match up to shard sizes and this rank reads (and
// so checks) every old shard.
std::string check_for_rank(const fs::path& dir, const Json& manifest, const std::vector<FlatShard>& shards,
                           const std::string& optimizer, int rank, int world) {
  try {
    if (manifest.at("format") != kCheckpointFormat) return "format " + manifest.at("format").dump();
    if (manifest.at("optimizer").get<std::string>() != optimizer) {
      return "optimizer " + manifest.at("optimizer").get<std::string>() + ", this job uses " + optimizer;
    }
    const Json layout = layout_json(shards);
    if (manifest.at("world_size").get<int>() == world) {
      if (manifest.at("units") != layout) return "parameter layout differs from this model";
      return check_shard_file(dir, manifest.at("shards"), static_cast<size_t>(rank));
    }
    if (layout_for_resharding(manifest.at("units")) != layout_for_resharding(layout)) {
      return "parameter layout differs from this model";
    }
    if (manifest.value("save_on_each_node", false)) {
      return "written with --save-on-each-node by " + manifest.at("world_size").dump() + " ranks; resuming at " +
             std::to_string(world) + " ranks reshards it, which needs every shard on every node: copy all " +
             "rank-*.bin files of " + dir.string() + " to each node first";
    }
    const Json& listed = manifest.at("shards");
    if (!listed.is_array()) return "manifest field \"shards\" is not an array";
    for (size_t i = 0; i < listed.size(); ++i) {
      if (auto why = check_shard_file(dir, listed, i); !why.empty()) return why;
    }
  } catch (const Json::exception& e) {
    return std::string("manifest field missing or mistyped: ") + e.what();
  }
  return "";
}

// Loads this rank's slice of a checkpoint written by `manifest.world_size` ranks (another world
// size): every old shard is read, each unit's parameters and optimizer state re-cut for `shards`.
void load_resharded(const fs::path& dir, const Json& manifest, std::vector<FlatShard>& shards,
                    ShardOptimizer& optimizer) {
  std::vector<ShardFileContents> old;
  for (size_t i = 0; i < manifest.at("shards").size(); ++i)
    old.push_back(read_listed_shard(dir, manifest.at("shards"), i));
  for (size_t u = 0; u < shards.size(); ++u) {
    std::vector<const std::vector<float>*> params;
    std::vector<std::vector<NamedArray>> states;
    for (const auto& c : old) {
      const auto& arrays = c.units.at(u).arrays;
      if (arrays.empty() || arrays[0].name != "param") {
        throw UsageError("checkpoint " + dir.string() + ": unit " + shards[u].unit + " has no param array first");
      }
      params.push_back(&arrays[0].values);
      states.emplace_back(arrays.begin() + 1, arrays.end());
    }
    shards[u].param = reslice(params, shards[u]);
    optimizer.load_state(u, optimizer.reshard_state(shards[u], states));
  }
}

// Moves the durable `staging` to `dir` (inside output_dir), replacing a checkpoint of the same
// step there, so that at every instant one complete checkpoint of the step is at `dir`: an
// atomic exchange (renameat2 RENAME_EXCHANGE: ext4, xfs, btrfs, tmpfs), then the old one is
// removed. Filesystems without it (NFS, some parallel filesystems: EINVAL) get two renames, old
// aside then new into place; a crash between them leaves the old step at replaced_dir_name,
// which recover_replaced_steps puts back.
void publish_step_dir(const fs::path& output_dir, const fs::path& staging, const fs::path& dir,
                      int64_t step) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec))) {
    if (::rename(staging.c_str(), dir.c_str()) != 0)
      throw SysErrorException({"rename", errno, staging.string() + " -> " + dir.string()});
    fsync_directory(output_dir);
    return;
  }
  if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) == 0) {
    fsync_directory(output_dir);
    fs::remove_all(staging, ec);  // now the old step; a leftover is removed by the next save
    return;
  }
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
    throw SysErrorException({"renameat2", errno, staging.string() + " <-> " + dir.string()});
  const fs::path old = output_dir / replaced_dir_name(step);
  fs::remove_all(old, ec);
  if (::rename(dir.c_str(), old.c_str()) != 0)
    throw SysErrorException({"rename", errno, dir.string() + " -> " + old.string()});
  if (::rename(staging.c_str(), dir.c_str()) != 0) {
    const int e = errno;
    ::rename(old.c_str(), dir.c_str());  // put the old one back
    throw SysErrorException({"rename", e, staging.string() + " -> " + dir.string()});
  }
  fsync_directory(output_dir);
  fs::remove_all(old, ec);
}

// After a crash between publish_step_dir's two renames: a step whose directory has no manifest
// but whose replaced copy has one gets the copy back; a replaced copy whose step is complete
// again is removed.
void recover_replaced_steps(const fs::path& output_dir) {
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return;
  std::vector<fs::path> replaced;
  for (const auto& e : fs::directory_iterator(output_dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(".checkpoint-", 0) == 0 && n.size() > 4 && n.compare(n.size() - 4, 4, ".old") == 0)
      replaced.push_back(e.path());
  }
  for (const fs::path& old : replaced) {
    const std::string n = old.filename().string();
    const fs::path dir = output_dir / n.substr(1, n.size() - 5);
    if (fs::exists(dir / "manifest.json", ec)) {
      fs::remove_all(old, ec);
    } else if (fs::exists(old / "manifest.json", ec)) {
      fs::remove_all(dir, ec);  // no manifest: not a checkpoint
      if (::rename(old.c_str(), dir.c_str()) == 0) fsync_directory(output_dir);
    }
  }
}

}  // namespace

void broadcast_steps(Comm& comm, std::vector<int64_t>& steps, int root) {
  int64_t count = static_cast<int64_t>(steps.size());
  comm.broadcast_bytes(&count, sizeof(count), root);
  steps.resize(static_cast<size_t>(count));
  if (count > 0) comm.broadcast_bytes(steps.data(), steps.size() * sizeof(int64_t), root);
}

std::string sha256_fd(int fd, const std::string& shown) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  uint64_t at = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      EVP_MD_CTX_free(ctx);
      throw UsageError("cannot read " + shown + " to hash it (" + std::strerror(e) + ")");
    }
    if (n == 0) break;
    EVP_DigestUpdate(ctx, buf.data(), static_cast<size_t>(n));
    at += static_cast<uint64_t>(n);
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  std::string hex;
  char b[3];
  for (unsigned i = 0; i < len; ++i) {
    std::snprintf(b, sizeof(b), "%02x", md[i]);
    hex += b;
  }
  return hex;
}

std::string sha256_file(const fs::path& path) {
  const UniqueFd fd = open_regular_file(path, path.string());
  return sha256_fd(fd.get(), path.string());
}

fs::path save_checkpoint(Comm& comm, const SaveRequest& req, const std::vector<FlatShard>& shards,
                         const ShardOptimizer& optimizer, std::vector<std::string>* warnings) {
  const fs::path dir = req.output_dir / step_dir_name(req.state.step);
  const fs::path staging = req.output_dir / staging_dir_name(req.state.step);
  const int rank = comm.rank(), world = comm.world_size();
  // Rank 0 writes the manifest on a shared file system; with save_on_each_node the first local
  // rank of every node writes the same manifest on its node's disk.
  const bool writes_manifest = req.save_on_each_node ? req.local_rank == 0 : rank == 0;
  // Everything is written into `staging` and published whole (publish_step_dir): an existing
  // checkpoint of this step (a re-save with --no-resume) stays usable until the new one is
  // durable. A staging directory left by an earlier failed save holds shards no manifest vouches
  // for: start it afresh.
  if (writes_manifest) {
    recover_replaced_steps(req.output_dir);
    std::error_code ec;
    fs::remove_all(staging, ec);
    fs::create_directories(staging);
  }
  comm.pause_barrier("the checkpoint's start (rank 0 clears its staging directory)");
  // Every rank: on node-local disks without save_on_each_node no manifest writer made it here.
  fs::create_directories(staging);
  // A failed save (a full disk) frees what it wrote: the old checkpoint, if any, is untouched.
  auto discard_staging = [&] {
    std::error_code ec;
    if (writes_manifest) fs::remove_all(staging, ec);
  };

  std::vector<ShardFileUnit> units;
  for (size_t u = 0; u < shards.size(); ++u) {
    ShardFileUnit su{shards[u].unit, {{"param", shards[u].param}}};
    for (auto& a : optimizer.state(u)) su.arrays.push_back(std::move(a));
    units.push_back(std::move(su));
  }
  const std::string file = shard_name(rank, world);
  try {
    write_shard_file(staging / file,
                     {{"rank", rank}, {"world_size", world}, {"step", req.state.step}}, units);
  } catch (...) {
    discard_staging();
    throw;
  }

  // Every rank's size and SHA-256 over the comm: the manifest writers need all of them, and on
  // node-local disks no rank can read another node's shard.
  ShardDigest mine{};
  const std::string digest = sha256_file(staging / file);
  std::copy(digest.begin(), digest.end(), mine.sha256_hex);
  mine.bytes = fs::file_size(staging / file);
  std::vector<ShardDigest> all(static_cast<size_t>(world));
  comm.allgather_bytes(&mine, sizeof(mine), all.data());  // also: every shard is durable

  if (writes_manifest) {
    Json manifest = {{"format", kCheckpointFormat},
                     {"step", req.state.step},
                     {"world_size", world},
                     {"optimizer", optimizer.name()},
                     {"optimizer_steps", optimizer.steps()},
                     {"train_state", state_json(req.state)},
                     {"model_dir", req.model_dir},
                     {"model_config", req.model_config},
                     {"save_on_each_node", req.save_on_each_node},
                     {"units", layout_json(shards)},
                     {"shards", Json::array()}};
    for (int r = 0; r < world; ++r) {
      const ShardDigest& d = all[static_cast<size_t>(r)];
      manifest["shards"].push_back({{"file", shard_name(r, world)},
                                    {"bytes", d.bytes},
                                    {"sha256", std::string(d.sha256_hex, sizeof(d.sha256_hex))}});
    }
    try {
      write_file_atomically(staging / "manifest.json", manifest.dump(1) + "\n");
      publish_step_dir(req.output_dir, staging, dir, req.state.step);
    } catch (...) {
      discard_staging();
      throw;
    }
    if (req.save_total_limit > 0) {
      auto all_dirs = list_checkpoints(req.output_dir);
      for (size_t i = static_cast<size_t>(req.save_total_limit); i < all_dirs.size(); ++i) {
        // Manifest first: a crash mid-removal leaves an incomplete (ignored) directory.
        fs::remove(all_dirs[i] / "manifest.json");
        std::error_code ec;
        fs::remove_all(all_dirs[i], ec);
        if (warnings) warnings->push_back("pruned " + all_dirs[i].string() + " (--save-total-limit " +
                                          std::to_string(req.save_total_limit) + ")");
      }
    }
  }
  // Nobody proceeds (or exits) before the checkpoint is in place; the manifest writer's pause
  // (fsync, rename, pruning) counts against the pause timeout, not the collective timeout.
  comm.pause_barrier("the checkpoint's end (the manifest writer publishes it)");
  // Where the staging directory is still there now, no manifest writer shares this disk
  // (node-local disks without save_on_each_node): nothing will ever vouch for the shards in it.
  // Elsewhere the writer renamed it into place before the barrier.
  if (!writes_manifest) {
    std::error_code ec;
    fs::remove_all(staging, ec);
  }
  return dir;
}

std::vector<fs::path> list_checkpoints(const fs::path& output_dir) {
  std::vector<std::pair<int64_t, fs::path>> found;
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return {};
  for (const auto& e : fs::directory_iterator(output_dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("checkpoint-", 0) != 0 || !fs::exists(e.path() / "manifest.json")) continue;
    try {
      found.emplace_back(std::stoll(n.substr(11)), e.path());
    } catch (const std::exception&) {
    }
  }
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::vector<fs::path> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

std::optional<TrainState> resume_latest(Comm& comm, const fs::path& output_dir, std::vector<FlatShard>& shards,
                                        ShardOptimizer& optimizer, std::vector<std::string>* warnings) {
  // Every rank lists the same shared directory; a rank that cannot use a candidate vetoes it
  // for all (the sum of "ok" votes must equal the world size), so all ranks resume together.
  // Rank 0's list decides the candidates, broadcast as step numbers.
  // With node-local disks each rank reads its own node's copy of the same step.
  std::vector<int64_t> steps;
  if (comm.rank() == 0) {
    recover_replaced_steps(output_dir);
    for (const auto& c : list_checkpoints(output_dir)) steps.push_back(std::stoll(c.filename().string().substr(11)));
  }
  broadcast_steps(comm, steps, 0);
  for (int64_t step : steps) {
    const fs::path dir = output_dir / step_dir_name(step);
    std::string why;
    Json manifest;
    try {
      const UniqueFd dir_fd = open_directory(dir, "checkpoint " + dir.string());
      manifest = read_manifest(dir_fd.get(), dir);
      why = check_for_rank(dir, manifest, shards, optimizer.name(), comm.rank(), comm.world_size());
    } catch (const std::exception& e) {
      why = std::string("manifest unreadable: ") + e.what();
    }
    float ok = why.empty() ? 1.0f : 0.0f;
    comm.allreduce_sum(&ok, 1);
    if (ok < static_cast<float>(comm.world_size())) {
      if (warnings) {
        warnings->push_back("skipping checkpoint " + dir.string() + ": " +
                            (why.empty() ? "another rank cannot load its shard" : why));
      }
      continue;
    }
    const int old_world = manifest.at("world_size").get<int>();
    if (old_world != comm.world_size()) {
      load_resharded(dir, manifest, shards, optimizer);
      if (warnings) {
        warnings->push_back("resharded checkpoint " + dir.string() + " from " + std::to_string(old_world) + " to " +
                            std::to_string(comm.world_size()) + " ranks");
      }
      optimizer.set_steps(manifest.at("optimizer_steps").get<int64_t>());
      return state_from_json(manifest.at("train_state"));
    }
    const auto contents =
        read_listed_shard(dir, manifest.at("shards"), static_cast<size_t>(comm.rank()));
    for (size_t u = 0; u < shards.size(); ++u) {
      const auto& arrays = contents.units.at(u).arrays;
      if (arrays.at(0).name != "param" || arrays[0].values.size() != shards[u].param.size()) {
        throw UsageError("checkpoint " + dir.string() + ": unit " + shards[u].unit + " param array has the wrong size");
      }
      shards[u].param = arrays[0].values;
      optimizer.load_state(u, std::vector<NamedArray>(arrays.begin() + 1, arrays.end()));
    }
    optimizer.set_steps(manifest.at("optimizer_steps").get<int64_t>());
    return state_from_json(manifest.at("train_state"));
  }
  return std::nullopt;
}

namespace {

// Element count of a manifest shape, refused when negative, not an integer, or more than `limit`
// (the elements the shards hold for its unit), so no product can wrap.
uint64_t checked_numel(const Json& shape, uint64_t limit, const std::string& field) {
  if (!shape.is_array())
    throw UsageError(field + ".shape must be an array of sizes, found " + shape.dump());
  uint64_t n = 1;
  for (const Json& d : shape) {
    if (!d.is_number_unsigned())
      throw UsageError(field + ".shape " + shape.dump() + ": " + d.dump() +
                       " is not a non-negative integer");
    const uint64_t x = d.get<uint64_t>();
    if (x != 0 && n > limit / x)
      throw UsageError(field + ".shape " + shape.dump() + " holds more elements than the shards' " +
                       std::to_string(limit) + " for its unit");
    n *= x;
  }
  return n;
}

// Appends each listed shard's param arrays to full[u], every shard opened beneath `dir` and
// checked against its recorded size and SHA-256 first.
void gather_params(int dir_fd, const fs::path& dir, const Json& manifest,
                   std::vector<std::vector<float>>& full) {
  const std::string mpath = (dir / "manifest.json").string();
  const Json& units = manifest.at("units");
  const Json& shards = manifest.at("shards");
  if (!shards.is_array() || shards.empty())
    throw UsageError(mpath + ": field \"shards\" must be a non-empty array");
  // The same file listed twice (under two spellings) would be read twice: a manifest could then
  // make one shard fill memory many times over.
  std::set<std::pair<dev_t, ino_t>> seen;
  for (size_t i = 0; i < shards.size(); ++i) {
    const ListedShard s = open_listed_shard(dir_fd, dir, shards, i);
    struct stat st {};
    if (::fstat(s.fd.get(), &st) != 0)
      throw UsageError(s.shown + ": cannot stat (" + std::strerror(errno) + ")");
    if (!seen.insert({st.st_dev, st.st_ino}).second)
      throw UsageError(mpath + ": shards[" + std::to_string(i) +
                       "].file names a shard listed before it");
    if (static_cast<uint64_t>(st.st_size) != s.bytes)
      throw UsageError("checkpoint shard " + s.shown + " has " + std::to_string(st.st_size) +
                       " bytes, " + mpath + " shards[" + std::to_string(i) + "].bytes says " +
                       std::to_string(s.bytes));
    if (sha256_fd(s.fd.get(), s.shown) != s.sha256)
      throw UsageError("checkpoint shard " + s.shown + " fails its SHA-256 (corrupt or rewritten)");
    const ShardFileContents c = read_shard_file(s.fd.get(), s.shown);
    if (c.units.size() != units.size())
      throw UsageError("checkpoint shard " + s.shown + " holds " + std::to_string(c.units.size()) +
                       " units, " + mpath + " lists " + std::to_string(units.size()));
    for (size_t u = 0; u < units.size(); ++u) {
      const auto& arrays = c.units[u].arrays;
      if (c.units[u].unit != units[u].at("unit").get<std::string>() || arrays.empty() ||
          arrays[0].name != "param")
        throw UsageError("checkpoint shard " + s.shown + ": unit " + std::to_string(u) + " is \"" +
                         c.units[u].unit + "\" without a \"param\" array first; " + mpath +
                         " lists units[" + std::to_string(u) + "] as " +
                         units[u].at("unit").dump());
      full[u].insert(full[u].end(), arrays[0].values.begin(), arrays[0].values.end());
    }
  }
}

}  // namespace

GatheredCheckpoint gather_checkpoint(const fs::path& dir) {
  const UniqueFd dir_fd = open_directory(dir, "checkpoint " + dir.string());
  return gather_checkpoint(dir_fd.get(), dir);
}

GatheredCheckpoint gather_checkpoint(int dir_fd, const fs::path& dir) {
  GatheredCheckpoint g;
  const std::string mpath = (dir / "manifest.json").string();
  struct stat st {};
  if (::fstatat(dir_fd, "manifest.json", &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
    throw UsageError("checkpoint " + dir.string() + " has no manifest.json: it is incomplete");
  g.manifest = read_manifest(dir_fd, dir);
  try {
    if (!g.manifest.is_object() || !g.manifest.contains("units") ||
        !g.manifest.at("units").is_array())
      throw UsageError(mpath + ": field \"units\" (an array) is missing");
    const Json& units = g.manifest.at("units");
    std::vector<std::vector<float>> full(units.size());
    gather_params(dir_fd, dir, g.manifest, full);
    // Every parameter is a span of its unit's gathered vector; the spans may not overlap, so
    // the tensors made here never hold more than the shards did.
    std::set<std::string> names;
    for (size_t u = 0; u < units.size(); ++u) {
      const Json& params = units[u].at("params");
      if (!params.is_array())
        throw UsageError(mpath + ": units[" + std::to_string(u) + "].params must be an array");
      const uint64_t have = full[u].size();
      std::vector<std::pair<uint64_t, uint64_t>> spans;  // [begin, end) in elements, as listed
      for (size_t k = 0; k < params.size(); ++k) {
        const Json& p = params[k];
        const std::string field =
            mpath + ": units[" + std::to_string(u) + "].params[" + std::to_string(k) + "]";
        const std::string name = p.at("name").get<std::string>();
        if (!names.insert(name).second)
          throw UsageError(field + ": parameter \"" + name + "\" is listed twice");
        const uint64_t n = checked_numel(p.at("shape"), have, field);
        const Json& off = p.at("offset");
        if (!off.is_number_unsigned() || off.get<uint64_t>() > have - n)
          throw UsageError(field + " (\"" + name + "\"): offset " + off.dump() + " + " +
                           std::to_string(n) + " elements lies outside the unit's " +
                           std::to_string(have) + " elements in the shards");
        spans.emplace_back(off.get<uint64_t>(), off.get<uint64_t>() + n);
      }
      // Checked before anything is copied: overlapping spans could copy one unit many times over.
      std::vector<std::pair<uint64_t, uint64_t>> sorted = spans;
      std::sort(sorted.begin(), sorted.end());
      for (size_t k = 1; k < sorted.size(); ++k)
        if (sorted[k].first < sorted[k - 1].second)
          throw UsageError(
              mpath + ": units[" + std::to_string(u) + "] has parameters overlapping at element " +
              std::to_string(sorted[k].first) + ": each parameter is its own span of the unit");
      for (size_t k = 0; k < params.size(); ++k) {
        FullTensor t;
        t.shape = params[k].at("shape").get<std::vector<int64_t>>();
        t.values.assign(full[u].begin() + static_cast<std::ptrdiff_t>(spans[k].first),
                        full[u].begin() + static_cast<std::ptrdiff_t>(spans[k].second));
        g.params.emplace_back(params[k].at("name").get<std::string>(), std::move(t));
      }
    }
  } catch (const Json::exception& e) {
    throw UsageError(mpath + ": field missing or mistyped: " + e.what());
  }
  return g;
}

}  // namespace fabkit::trainer
