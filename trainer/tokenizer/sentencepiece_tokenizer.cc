#include <dlfcn.h>
#include <unistd.h>

#include <mutex>

#include "common/errors.h"
#include "common/regular_file.h"
#include "common/trusted_path.h"
#include "trainer/tokenizer/sentencepiece_shim.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::trainer {
namespace fs = std::filesystem;
namespace {

// The shim's entry points, resolved once (see sentencepiece_shim.h for why it is dlopen'ed).
struct Shim {
  decltype(&fabkit_sp_load_proto) load;
  decltype(&fabkit_sp_free) free;
  decltype(&fabkit_sp_encode) encode;
  decltype(&fabkit_sp_decode) decode;
  decltype(&fabkit_sp_release) release;
  decltype(&fabkit_sp_info) info;
  decltype(&fabkit_sp_exact_piece) exact_piece;
  decltype(&fabkit_sp_train) train;
};

// Where the shim may be, first to last. fabtrain may run as root, so each file path must pass the
// trust rule (common/trusted_path.h) before it is loaded: FABKIT_SENTENCEPIECE_SHIM, beside the
// executable (the installed libexec/fabkit), ../lib; the build tree's copy only for a binary
// that itself lies in the build tree (an installed copy never consults a path the build left in
// it); last the loader's own search path by soname.
std::vector<std::string> shim_candidates() {
  std::vector<std::string> c;
  if (const char* env = std::getenv("FABKIT_SENTENCEPIECE_SHIM"); env && *env) c.push_back(env);
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    const std::string self(exe, static_cast<size_t>(n));
    fs::path dir = fs::path(self).parent_path();
    c.push_back((dir / "libfabkit_sentencepiece_shim.so").string());
    c.push_back((dir / ".." / "lib" / "libfabkit_sentencepiece_shim.so").string());
    const std::string build_dir = FABKIT_SP_SHIM_BUILD_DIR;
    if (self.rfind(build_dir + "/", 0) == 0) c.push_back(FABKIT_SP_SHIM_BUILD_PATH);
  }
  return c;
}

const Shim& shim() {
  static Shim s;
  static std::once_flag once;
  static std::string error;
  std::call_once(once, [] {
    void* h = nullptr;
    std::string tried;
    std::vector<std::string> candidates = shim_candidates();
    for (auto it = candidates.begin(); it != candidates.end();) {
      if (::access(it->c_str(), F_OK) != 0) {
        it = candidates.erase(it);
        continue;
      }
      TrustOptions t;
      t.regular_file = true;
      if (auto d = find_distrust(*it, t)) {
        tried += "\n  " + *it + ": refused: " + d->message() + " (" + d->fix + ")";
        it = candidates.erase(it);
        continue;
      }
      ++it;
    }
    candidates.push_back("libfabkit_sentencepiece_shim.so");  // the loader's search path
    for (const auto& path : candidates) {
      // A new link namespace: the shim gets its own libstdc++ and sentencepiece's bundled
      // protobuf never meets LibTorch's libprotobuf. (RTLD_DEEPBIND was tried: it binds
      // sentencepiece to libstdc++'s uninitialised std::cerr instead of the executable's
      // copy-relocated one and crashes on the first log line.)
      h = ::dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h) break;
      tried += "\n  " + path + ": " + ::dlerror();
    }
    if (!h) {
      error = "cannot load libfabkit_sentencepiece_shim.so (SentencePiece support); tried:" + tried +
              "\nset FABKIT_SENTENCEPIECE_SHIM to its path";
      return;
    }
    auto sym = [&](const char* name) {
      void* p = ::dlsym(h, name);
      if (!p) error = std::string("libfabkit_sentencepiece_shim.so lacks ") + name;
      return p;
    };
    s.load = reinterpret_cast<decltype(s.load)>(sym("fabkit_sp_load_proto"));
    s.free = reinterpret_cast<decltype(s.free)>(sym("fabkit_sp_free"));
    s.encode = reinterpret_cast<decltype(s.encode)>(sym("fabkit_sp_encode"));
    s.decode = reinterpret_cast<decltype(s.decode)>(sym("fabkit_sp_decode"));
    s.release = reinterpret_cast<decltype(s.release)>(sym("fabkit_sp_release"));
    s.info = reinterpret_cast<decltype(s.info)>(sym("fabkit_sp_info"));
    s.exact_piece = reinterpret_cast<decltype(s.exact_piece)>(sym("fabkit_sp_exact_piece"));
    s.train = reinterpret_cast<decltype(s.train)>(sym("fabkit_sp_train"));
  });
  if (!error.empty()) throw UsageError(error);
  return s;
}

class SentencePieceTokenizer : public Tokenizer {
 public:
  SentencePieceTokenizer(const fs::path& file, std::optional<int64_t> bos, std::optional<int64_t> eos,
                         std::optional<int64_t> pad)
      : file_(file.string()) {
    char err[512] = {0};
    const std::string bytes = read_regular_file(file, kMaxTokenizerFileBytes, kTokenizerFileLimitWhy);
    sp_ = shim().load(bytes.data(), bytes.size(), err, sizeof err);
    if (!sp_)
      throw UsageError(file_ + ": not a SentencePiece model (" + err +
                       "); Llama-2/Mistral ship tokenizer.model in this format");
    int v = 0, b = -1, e = -1, p = -1, u = -1;
    shim().info(sp_, &v, &b, &e, &p, &u);
    vocab_ = v;
    auto id_or = [&](int id, std::optional<int64_t> fb) -> std::optional<int64_t> {
      if (id >= 0) return id;
      return fb;
    };
    bos_ = id_or(b, bos);
    auto eos_id = id_or(e, eos);
    if (!eos_id) {
      shim().free(sp_);
      throw UsageError(file_ + ": the model defines no </s> (eos) and config.json has no eos_token_id; "
                               "packing needs one");
    }
    eos_ = *eos_id;
    pad_ = id_or(p, pad);
  }
  ~SentencePieceTokenizer() override { shim().free(sp_); }
  SentencePieceTokenizer(const SentencePieceTokenizer&) = delete;
  SentencePieceTokenizer& operator=(const SentencePieceTokenizer&) = delete;

  std::string kind() const override { return "sentencepiece"; }
  std::vector<int64_t> encode(const std::string& text) const override {
    int* ids = nullptr;
    size_t n = 0;
    char err[512] = {0};
    if (shim().encode(sp_, text.data(), text.size(), &ids, &n, err, sizeof err) != 0)
      throw UsageError(file_ + ": cannot encode text: " + err);
    std::vector<int64_t> out(ids, ids + n);
    shim().release(ids);
    return out;
  }
  std::string decode(const std::vector<int64_t>& ids) const override {
    std::vector<int> v;
    for (int64_t id : ids) {
      if (id < 0 || id >= vocab_)
        throw UsageError(file_ + ": id " + std::to_string(id) + " is outside the vocabulary");
      v.push_back(static_cast<int>(id));
    }
    char* out = nullptr;
    size_t len = 0;
    char err[512] = {0};
    if (shim().decode(sp_, v.data(), v.size(), &out, &len, err, sizeof err) != 0)
      throw UsageError(file_ + ": cannot decode: " + err);
    std::string s(out, len);
    shim().release(out);
    return s;
  }
  std::optional<int64_t> bos_id() const override { return bos_; }
  int64_t eos_id() const override { return eos_; }
  std::optional<int64_t> pad_id() const override { return pad_; }
  int64_t vocab_size() const override { return vocab_; }
  std::optional<int64_t> special_token_id(const std::string& token) const override {
    int id = shim().exact_piece(sp_, token.c_str());
    if (id < 0) return std::nullopt;
    return id;
  }

 private:
  std::string file_;
  void* sp_ = nullptr;
  int64_t vocab_ = 0;
  std::optional<int64_t> bos_, pad_;
  int64_t eos_ = 0;
};

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece(const fs::path& file, std::optional<int64_t> bos,
                                              std::optional<int64_t> eos, std::optional<int64_t> pad) {
  return std::make_unique<SentencePieceTokenizer>(file, bos, eos, pad);
}

void train_sentencepiece(const std::string& args) {
  char err[1024] = {0};
  if (shim().train(args.c_str(), err, sizeof err) != 0)
    throw UsageError(std::string("SentencePiece training failed: ") + err);
}

}  // namespace fabkit::trainer
