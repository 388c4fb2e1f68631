// fabtrain runs as root on files other users wrote: a checkpoint's manifest and shards, a model
// directory, a dataset. A hostile or broken one must end in exit 2 with the file and field named,
// quickly, having written nothing: never a crash, heap bytes or another file's bytes in the
// export, a hang on a FIFO, or memory filled from /dev/zero.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "tests/integration/trainer/run_support.h"
#include "tests/support/ttar.h"
#include "trainer/checkpoint/checkpoint.h"

namespace fs = std::filesystem;

namespace fabkit::testing {
namespace {

// Where input without end used to go, a test must not take the machine with it: fabtrain's heap
// is capped (LibTorch starts in far less).
constexpr uint64_t kHeapCap = 2ull << 30;

class UntrustedInputs : public ::testing::Test {
 public:
  UntrustedInputs() : dir_("fabtrain_untrusted") {
    write_tiny_model(dir_.path() / "model", false);
    write_token_data(dir_.path() / "train.jsonl", 8, 17, 300);
    setenv("FABTRAIN_CONTROL_DIR", (dir_.path() / "ctl").c_str(), 1);
  }
  ~UntrustedInputs() override { unsetenv("FABTRAIN_CONTROL_DIR"); }
  std::vector<std::string> train_args(const fs::path& model, const fs::path& data,
                                      const std::string& out) const {
    return {"--model",      model.string(),
            "--data",       data.string(),
            "--output",     (dir_.path() / out).string(),
            "--max-length", "16",
            "--max-steps",  "1",
            "--seed",       "1",
            "--device",     "cpu"};
  }
  // A checkpoint of one training step, made once per test.
  fs::path train_checkpoint() {
    auto r = run_fabtrain(train_args(dir_.path() / "model", dir_.path() / "train.jsonl", "run"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return trainer::list_checkpoints(dir_.path() / "run").at(0);
  }
  RunResult run_export(const fs::path& ckpt, const std::string& out) {
    return run_fabtrain(
        {"export", "--checkpoint", ckpt.string(), "--out", (dir_.path() / out).string()}, 120,
        kHeapCap);
  }
  // Nothing of an export that failed: no --out, no staging directory beside it.
  void expect_nothing_written(const std::string& out) {
    EXPECT_FALSE(fs::exists(dir_.path() / out)) << out;
    for (const auto& e : fs::directory_iterator(dir_.path()))
      EXPECT_EQ(e.path().filename().string().find(".exporting-"), std::string::npos) << e.path();
  }
  TempDir dir_;
};

Json read_json(const fs::path& f) {
  std::ifstream in(f);
  return Json::parse(in);
}

void expect_names(const std::string& text, std::initializer_list<std::string> parts) {
  for (const auto& p : parts)
    EXPECT_NE(text.find(p), std::string::npos) << "missing \"" << p << "\" in:\n" << text;
}

// A copy of the checkpoint whose manifest `edit` changed.
fs::path hostile_copy(const fs::path& ckpt, const fs::path& where,
                      const std::function<void(Json&)>& edit) {
  fs::create_directories(where.parent_path());
  fs::copy(ckpt, where, fs::copy_options::recursive);
  Json m = read_json(where / "manifest.json");
  edit(m);
  write_file(where / "manifest.json", m.dump(1));
  return where;
}

TEST_F(UntrustedInputs, ExportOfAHostileManifestExitsTwoNamingTheFieldAndWritesNothing) {
  const fs::path ckpt = train_checkpoint();
  const std::string shard = "rank-00000-of-00001.bin";
  // The shard outside the checkpoint that a path in the manifest reaches, vouched for by hash.
  const fs::path outside = dir_.path() / "elsewhere" / shard;
  fs::create_directories(outside.parent_path());
  fs::copy_file(ckpt / shard, outside);
  struct Case {
    std::string name;
    std::function<void(Json&)> edit;
    std::vector<std::string> said;
  };
  const std::vector<Case> cases = {
      {"offset-past-the-shard",
       [](Json& m) { m["units"][1]["params"][0]["offset"] = 1000000000; },
       {"units[1].params[0]", "offset 1000000000", "outside"}},
      {"offset-before-the-buffer",
       [](Json& m) { m["units"][1]["params"][0]["offset"] = -64; },
       {"units[1].params[0]", "offset -64"}},
      {"wrapping-element-count",
       [](Json& m) {
         m["units"][1]["params"][0]["shape"] = {4611686018427387905ull, 4};
       },
       {"units[1].params[0].shape", "more elements"}},
      {"absolute-shard-path",
       [&](Json& m) { m["shards"][0]["file"] = outside.string(); },
       {"shards[0].file", "is an absolute path"}},
      {"dotdot-shard-path",
       [&](Json& m) { m["shards"][0]["file"] = "../../elsewhere/" + shard; },
       {"shards[0].file", "'..'"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path bad =
        hostile_copy(ckpt, dir_.path() / ("bad-" + c.name) / ckpt.filename(), c.edit);
    auto r = run_export(bad, "hf-" + c.name);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    expect_names(r.output, {(bad / "manifest.json").string()});
    for (const auto& s : c.said) expect_names(r.output, {s});
    expect_nothing_written("hf-" + c.name);
  }
}

// The checkpoint's model directory is the user's: a tokenizer file there that is a symlink to a
// root-only file must not carry that file into the export root writes.
TEST_F(UntrustedInputs, ExportCopiesNoFileThroughASymlinkOutOfTheModelDirectory) {
  const fs::path ckpt = train_checkpoint();
  const fs::path secret = dir_.path() / "root-only";
  const std::string marker = "ROOT-ONLY-SECRET-7f3a9c";
  write_file(secret, marker + "\n");
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  fs::create_symlink(secret, dir_.path() / "model" / "tokenizer_config.json");
  auto r = run_export(ckpt, "hf");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_names(r.output, {(dir_.path() / "model" / "tokenizer_config.json").string(), "outside",
                          "--model-dir"});
  expect_nothing_written("hf");
  for (const auto& e : fs::recursive_directory_iterator(dir_.path())) {
    if (e.is_symlink() || !e.is_regular_file() || e.path() == secret) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str().find(marker), std::string::npos)
        << e.path() << " holds the root-only file's bytes";
  }
  // A directory that holds the files themselves, named with --model-dir, exports them.
  write_file(dir_.path() / "tok" / "tokenizer_config.json", "{\"model_max_length\": 16}");
  r = run_fabtrain({"export", "--checkpoint", ckpt.string(), "--out", (dir_.path() / "hf").string(),
                    "--model-dir", (dir_.path() / "tok").string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_json(dir_.path() / "hf" / "tokenizer_config.json")["model_max_length"], 16);
  EXPECT_TRUE(fs::exists(dir_.path() / "hf" / "model.safetensors"));
}

// Each file fabtrain reads from a model directory or as data, replaced by /dev/zero (through a
// symlink) or a FIFO, used to be read without end (or to block the open for ever).
TEST_F(UntrustedInputs, ModelAndDataFilesOnDevZeroOrAFifoFailFastNamingTheFile) {
  struct Case {
    std::string file;  // in a copy of the model directory; "data": the --data file itself
    bool fifo;
    std::string said;
  };
  const std::vector<Case> cases = {
      {"config.json", false, "config.json: is a character device, not a regular file"},
      {"tokenizer.json", false, "tokenizer.json: is a character device, not a regular file"},
      {"tokenizer.model", false, "tokenizer.model: is a character device, not a regular file"},
      {"model.safetensors.index.json", false,
       "model.safetensors.index.json: is a character device"},
      {"model.safetensors", true, "model.safetensors: is a FIFO, not a regular file"},
      {"data", false, "/dev/zero (the data file): is a character device, not a regular file"},
      {"data", true, "(the data file): is a FIFO, not a regular file"},
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file + (c.fifo ? " as a FIFO" : " on /dev/zero"));
    const fs::path model = dir_.path() / ("model-" + std::to_string(n));
    fs::copy(dir_.path() / "model", model);
    fs::path data = dir_.path() / "train.jsonl";
    const fs::path target =
        c.file == "data" ? dir_.path() / ("fifo-" + std::to_string(n)) : model / c.file;
    if (c.file == "config.json") fs::remove(target);
    if (c.fifo) {
      ASSERT_EQ(::mkfifo(target.c_str(), 0600), 0);
    } else if (c.file != "data") {
      fs::create_symlink("/dev/zero", target);
    }
    if (c.file == "data") data = c.fifo ? target : fs::path("/dev/zero");
    auto r = run_fabtrain(train_args(model, data, "out-" + std::to_string(n++)), 60, kHeapCap);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    expect_names(r.output, {c.said});
    EXPECT_LT(r.seconds, 30) << r.output;
  }
}

}  // namespace
}  // namespace fabkit::testing
