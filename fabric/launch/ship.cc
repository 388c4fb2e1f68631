#include "fabric/launch/ship.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "common/hex.h"
#include "common/json_read.h"
#include "fabric/launch/child_process.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::launch {
namespace {

// The receiving programs are one line each, without single quotes or '!' (launcher_sh_argv), so
// they are written as adjacent raw literals, one statement per source line.
//
// Defines t DIR, which refuses (one JSON line, exit 97) unless every directory from DIR up to / is
// owned by root or the running uid, is a directory (lstat: a symlink in the path is refused, not
// followed) and is not writable by group or others, except that directories above DIR may be
// sticky (/tmp). This is the rule of common/trusted_path (and of common/private_dir's ancestors),
// written again in sh because it must hold before the copy runs and nothing of fabcheck's can run
// before then: the same rule in both places, change them together. Where it holds, no other user
// can rename DIR or anything above it, so the later steps by path (write, sha256sum, chmod, exec)
// all reach the same file; where it does not, whoever owns or may write the directory named could
// swap the private directory for theirs between the checksum and the exec (or point its fabcheck
// at a root-owned file for root to overwrite). stat -c %u:%f is one lstat per component (owner and
// raw hex mode: no locale-dependent type names); the walk is bounded at 128 components.
const char* const kTrustedDirCheck =
    R"sh(me=$(id -u); )sh"
    R"sh(u() { echo "{\"fabkit_ship_error\":\"unsafe_dir\",\"host\":\"$(uname -n)\",)sh"
    R"sh(\"private_dir\":\"$1\",\"dir\":\"$2\",\"problem\":\"$3\",\"owner_uid\":\"$4\",)sh"
    R"sh(\"mode\":\"$5\",\"uid\":\"$me\"}"; exit 97; }; )sh"
    R"sh(t() { p=$1; i=0; while :; do )sh"
    R"sh(s=$(stat -c %u:%f -- "$p") || u "$1" "$p" cannot_stat; )sh"
    R"sh(o=${s%%:*}; m=$((0x${s#*:})); a=$(printf %04o $((m & 4095))); )sh"
    R"sh([ $((m & 61440)) -ne 40960 ] || u "$1" "$p" symlink "$o" "$a"; )sh"
    R"sh([ $((m & 61440)) -eq 16384 ] || u "$1" "$p" not_a_directory "$o" "$a"; )sh"
    R"sh([ "$o" = 0 ] || [ "$o" = "$me" ] || u "$1" "$p" foreign_owner "$o" "$a"; )sh"
    R"sh([ $((m & 18)) -eq 0 ] || { [ $i -gt 0 ] && [ $((m & 512)) -ne 0 ]; } || )sh"
    R"sh(u "$1" "$p" writable "$o" "$a"; )sh"
    R"sh([ "$p" = / ] && return 0; p=${p%/*}; p=${p:-/}; i=$((i+1)); )sh"
    R"sh([ $i -lt 128 ] || u "$1" "$p" too_deep; done; }; )sh";

// $1 size, $2 sha256, $3 base directory (an absolute path, or kDefaultBaseDir for $TMPDIR or
// /tmp: never an empty word, which ssh's joining of its remote words drops), then fabcheck's own
// arguments. The base directory is resolved once (readlink -f) so a symlinked $TMPDIR works and
// every later step uses the path that was checked. Until the check passes the EXIT trap only
// rmdirs (the directory is still empty, and an rm -rf through a path someone else controls is
// not wanted); the traps turn a signal into an exit so the EXIT trap runs however the agent ends.
const char* const kStdinReceiverBody =
    R"sh(case $3 in /*) b=$3;; *) b=${TMPDIR:-/tmp};; esac; )sh"
    R"sh(r=$(readlink -f -- "$b") && [ -n "$r" ] && )sh"
    R"sh(d=$(mktemp -d "$r/fabcheck-ship.XXXXXXXXXX") || { )sh"
    R"sh(echo "{\"fabkit_ship_error\":\"mktemp_failed\",\"dir\":\"$b\"}"; exit 97; }; )sh"
    R"sh(trap "rmdir -- \"\$d\" 2>/dev/null" EXIT; trap "exit 143" TERM; trap "exit 129" HUP; )sh"
    R"sh(trap "exit 130" INT; )sh"
    R"sh(t "$d"; trap "rm -rf -- \"\$d\"" EXIT; )sh"
    R"sh(head -c "$1" >"$d/fabcheck" || { )sh"
    R"sh(echo "{\"fabkit_ship_error\":\"write_failed\",\"dir\":\"$d\"}"; exit 97; }; )sh"
    R"sh(s=$(sha256sum "$d/fabcheck") || { )sh"
    R"sh(echo "{\"fabkit_ship_error\":\"sha256sum_failed\",\"dir\":\"$d\"}"; exit 97; }; )sh"
    R"sh(s=${s%% *}; n=$(wc -c <"$d/fabcheck"); )sh"
    R"sh([ "$s" = "$2" ] || { echo "{\"fabkit_ship_error\":\"checksum_mismatch\",)sh"
    R"sh(\"expected_sha256\":\"$2\",\"got_sha256\":\"$s\",\"expected_bytes\":$1,)sh"
    R"sh(\"got_bytes\":$n,\"path\":\"$d/fabcheck\"}"; exit 98; }; )sh"
    R"sh(chmod 0700 "$d/fabcheck"; shift 3; FABKIT_SHIPPED_DIR=$d "$d/fabcheck" "$@")sh";

// $1 sha256, $2 the copy sbcast wrote, then fabcheck's own arguments. The directory was checked
// when it was made (kMakeDirBody); it is checked again here because this is the step that runs
// the copy, and a check costs one stat per component.
const char* const kFileReceiverBody =
    R"sh(f=$2; t "${f%/*}"; s=$(sha256sum "$f") || { )sh"
    R"sh(echo "{\"fabkit_ship_error\":\"sha256sum_failed\",\"path\":\"$f\"}"; exit 97; }; )sh"
    R"sh(s=${s%% *}; )sh"
    R"sh([ "$s" = "$1" ] || { n=$(wc -c <"$f"); echo "{\"fabkit_ship_error\":)sh"
    R"sh(\"checksum_mismatch\",\"expected_sha256\":\"$1\",\"got_sha256\":\"$s\",)sh"
    R"sh(\"got_bytes\":$n,\"path\":\"$f\"}"; exit 98; }; )sh"
    R"sh(chmod 0700 "$f"; shift 2; FABKIT_SHIPPED_DIR=${f%/*} exec "$f" "$@")sh";

// $1 the private directory to make on a node before sbcast writes into it. mkdir (not -p) fails
// on a path that exists, so nobody can have prepared it; the check then refuses a place where
// someone could swap it before sbcast writes or before a launch runs the copy. The path is the
// one sbcast and every launch use, so it is checked as given: a symlink in it is refused.
const char* const kMakeDirBody = R"sh(mkdir -m 0700 -- "$1" || exit 1; t "$1")sh";

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1)
    throw ShipError("--ship: OpenSSL RAND_bytes failed to name the private directory");
  return hex_encode(raw.data(), raw.size());
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

}  // namespace

const char* to_string(ShipMode m) { return m == ShipMode::kStdin ? "stdin" : "sbcast"; }

const std::string& stdin_receiver_script() {
  static const std::string s = std::string(kTrustedDirCheck) + kStdinReceiverBody;
  return s;
}
const std::string& file_receiver_script() {
  static const std::string s = std::string(kTrustedDirCheck) + kFileReceiverBody;
  return s;
}
const std::string& make_dir_script() {
  static const std::string s = std::string(kTrustedDirCheck) + kMakeDirBody;
  return s;
}

std::string sha256_hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr) != 1)
    throw ShipError("--ship: OpenSSL EVP_Digest(SHA-256) failed");
  return hex_encode(md, len);
}

ShipBinary read_ship_binary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  if (!in || !(buf << in.rdbuf()))
    throw UsageError("--ship: cannot read this controller's binary " + path +
                     " to send it; run fabcheck from a readable file, or install fabcheck on the "
                     "hosts and drop --ship");
  ShipBinary b;
  b.path = path;
  auto bytes = std::make_shared<std::string>(buf.str());
  b.sha256_hex = sha256_hex(*bytes);
  b.bytes = std::move(bytes);
  return b;
}

Shipment::Shipment(ShipBinary binary, const LauncherSpec& spec, std::string base_dir,
                   int timeout_ms)
    : binary_(std::move(binary)),
      mode_(spec.kind == LauncherKind::kSrun ? ShipMode::kSbcast : ShipMode::kStdin),
      base_dir_(std::move(base_dir)),
      timeout_ms_(timeout_ms) {
  if (!base_dir_.empty()) {
    check_shell_inert(base_dir_, "--ship-dir");
    if (base_dir_[0] != '/')
      throw UsageError("--ship-dir '" + base_dir_ +
                       "': give an absolute directory on the hosts, e.g. /tmp");
  }
  if (mode_ == ShipMode::kStdin) return;
  const std::string job = env_or("SLURM_JOB_ID", "");
  const std::string nodes = env_or("SLURM_JOB_NUM_NODES", env_or("SLURM_NNODES", ""));
  if (job.empty() || nodes.empty())
    throw UsageError(
        "--ship with --launcher srun copies fabcheck with sbcast, which works inside a "
        "Slurm allocation only (SLURM_JOB_ID is not set): run it in salloc or an sbatch "
        "script, or use --launcher ssh");
  check_shell_inert(job, "SLURM_JOB_ID");
  check_shell_inert(nodes, "SLURM_JOB_NUM_NODES");
  nodes_ = nodes;
  private_dir_ = (base_dir_.empty() ? std::string("/tmp") : base_dir_) + "/fabcheck-ship." + job +
                 "." + random_hex(8);
  shipped_path_ = private_dir_ + "/fabcheck";
}

void Shipment::prepare() const {
  if (mode_ != ShipMode::kSbcast) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!prepared_) {
    prepared_ = true;
    try {
      make_copies();
    } catch (const ShipError& e) {
      prepare_error_ = e.what();
      prepare_error_code_ = e.code();
    }
  }
  if (!prepare_error_.empty()) throw ShipError(prepare_error_, prepare_error_code_);
}

void Shipment::make_copies() const {
  // sbcast writes to every node of the job, so the directory is made (and checked: kMakeDirBody)
  // on every node: one task per node.
  made_dirs_ = true;  // the destructor removes whatever part of it was made
  run_step({"srun", "--nodes=" + nodes_, "--ntasks-per-node=1", "--quiet", "sh", "-c",
            make_dir_script(), "fabcheck-ship-mkdir", private_dir_},
           "making the private directory " + private_dir_ + " on every node");
  run_step({"sbcast", binary_.path, shipped_path_},
           "copying " + binary_.path + " to " + shipped_path_ + " with sbcast");
}

Shipment::~Shipment() {
  if (!made_dirs_) return;
  try {
    run_step({"srun", "--nodes=" + nodes_, "--ntasks-per-node=1", "--quiet", "rm", "-rf", "--",
              private_dir_},
             "removing " + private_dir_);
  } catch (const std::exception&) {
    // A destructor cannot report; the directory is 0700 and named for the job, so it is inert.
  }
}

void Shipment::run_step(const std::vector<std::string>& argv, const std::string& what) const {
  ChildOptions o;
  o.argv = argv;
  o.search_path = true;
  o.own_process_group = true;
  o.stdout_is_log = true;
  std::string cmd;
  for (const auto& w : argv)
    cmd += (cmd.empty() ? "" : " ") +
           (w.size() > 80 ? "'<the directory script of fabric/launch/ship.cc>'" : w);
  try {
    ChildProcess child(o);
    std::string exit = child.wait_exit(wire::deadline_in_ms(timeout_ms_));
    if (child.exited() && WIFEXITED(child.exit_status()) && WEXITSTATUS(child.exit_status()) == 0)
      return;
    // A node that refused the directory says why on stdout (one JSON line per node that did).
    std::istringstream lines(child.log());
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] != '{') continue;
      try {
        if (auto f = parse_ship_failure(parse_json(line, "srun output line")))
          throw ShipError("--ship: " + what + " was refused: " + f->message, f->code);
      } catch (const JsonReadError&) {
      }
    }
    std::string tail = child.stderr_tail(600);
    throw ShipError("--ship: " + what + " failed: `" + cmd + "` ended with " + exit +
                    (tail.empty() ? "" : "; stderr: " + tail));
  } catch (const SysErrorException& e) {
    throw ShipError("--ship: " + what + ": cannot start `" + cmd + "`: " + e.what());
  } catch (const wire::WireError& e) {
    throw ShipError("--ship: " + what + ": `" + cmd + "`: " + e.what());
  }
}

std::vector<std::string> Shipment::receiver_argv(const std::vector<std::string>& args) const {
  std::vector<std::string> a;
  if (mode_ == ShipMode::kStdin)
    a = {std::to_string(binary_.bytes->size()), binary_.sha256_hex,
         base_dir_.empty() ? kDefaultBaseDir : base_dir_};
  else
    a = {binary_.sha256_hex, shipped_path_};
  a.insert(a.end(), args.begin(), args.end());
  return a;
}

RemoteCommand remote_fabcheck(const LauncherSpec& spec, const std::string& agent_path,
                              const Shipment* ship, const std::string& host,
                              const std::vector<std::string>& fabcheck_args) {
  RemoteCommand c;
  if (ship != nullptr) ship->prepare();
  if (ship == nullptr) {
    std::vector<std::string> words = {agent_path};
    words.insert(words.end(), fabcheck_args.begin(), fabcheck_args.end());
    c.argv = launcher_argv(spec, host, words);
    return c;
  }
  const bool stdin_mode = ship->mode() == ShipMode::kStdin;
  c.argv =
      launcher_sh_argv(spec, host, stdin_mode ? stdin_receiver_script() : file_receiver_script(),
                       "fabcheck-ship", ship->receiver_argv(fabcheck_args));
  if (stdin_mode) c.stdin_payload = ship->binary().bytes;
  return c;
}

namespace {

// The receiver's unsafe_dir line (kTrustedDirCheck) in words: the host, the directory, why another
// user could swap the copy there, and where to put it instead.
template <typename Field>
ShipFailure unsafe_dir_failure(const Field& field) {
  const std::string dir = field("dir"), problem = field("problem"), uid = field("uid");
  const std::string mode = " (mode " + field("mode") + ")";
  std::string why =
      problem == "foreign_owner"
          ? "belongs to uid " + field("owner_uid") + ", neither root nor uid " + uid +
                " that receives the copy: its owner could rename the private directory away and "
                "put one of theirs in its place"
      : problem == "writable"
          ? "may be written by group or others without the sticky bit" + mode +
                ": any of them could rename the private directory away and put one of theirs in "
                "its place"
      : problem == "symlink"
          ? "is a symbolic link, which is not followed: whoever controls it chooses where the "
            "copy goes (give the directory it points to)"
      : problem == "not_a_directory" ? "is not a directory" + mode
      : problem == "cannot_stat"     ? "cannot be checked (stat failed: see the stderr quoted)"
      : problem == "too_deep"        ? "is more than 128 directories deep"
                                     : "failed the check (" + problem.substr(0, 32) + ")";
  return ShipFailure{"pair.ship_unsafe_dir",
                     "the host " + field("host") + " refused to receive fabcheck into " +
                         field("private_dir") + ": " + dir + " " + why +
                         ", so the copy checked by SHA-256 need not be the one that runs as uid " +
                         uid + "; nothing was run. Use a --ship-dir that only root (or uid " + uid +
                         ") can change, up to /, or a sticky one such as /tmp, the default"};
}

}  // namespace

std::optional<ShipFailure> parse_ship_failure(const Json& j) {
  if (!j.is_object() || !j.contains("fabkit_ship_error") || !j["fabkit_ship_error"].is_string())
    return std::nullopt;
  const std::string kind = j["fabkit_ship_error"].get<std::string>();
  auto field = [&](const char* k) {
    const Json& v = j.value(k, Json());
    return v.is_string() ? v.get<std::string>().substr(0, 256) : v.dump().substr(0, 64);
  };
  if (kind == "unsafe_dir") return unsafe_dir_failure(field);
  if (kind == "checksum_mismatch")
    return ShipFailure{
        "pair.ship_checksum_mismatch",
        "the copy of fabcheck that reached the host (" + field("path") + ", " + field("got_bytes") +
            " bytes) has SHA-256 " + field("got_sha256") + ", the controller's binary " +
            field("expected_sha256") +
            (j.contains("expected_bytes") ? " (" + field("expected_bytes") + " bytes)" : "") +
            "; it was not run"};
  return ShipFailure{"pair.ship_failed",
                     "the host could not receive fabcheck (" + kind.substr(0, 32) + " in " +
                         field(j.contains("dir") ? "dir" : "path") +
                         "): it needs a writable local temporary directory and sh, mktemp, head "
                         "and sha256sum"};
}

}  // namespace fabkit::launch
