#include "fabric/launch/ship.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "common/hex.h"
#include "fabric/launch/child_process.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::launch {
namespace {

// $1 size, $2 sha256, $3 base directory ("" = $TMPDIR or /tmp), then fabcheck's own arguments.
// One line without single quotes or '!' (launcher_sh_argv). The traps turn a signal into an exit
// so the EXIT trap removes the directory however the agent ends.
const char* const kStdinReceiver =
    "b=${3:-${TMPDIR:-/tmp}}; "
    "d=$(mktemp -d \"$b/fabcheck-ship.XXXXXXXXXX\") || { "
    "echo \"{\\\"fabkit_ship_error\\\":\\\"mktemp_failed\\\",\\\"dir\\\":\\\"$b\\\"}\"; exit 97; "
    "}; "
    "trap \"rm -rf -- \\\"\\$d\\\"\" EXIT; trap \"exit 143\" TERM; trap \"exit 129\" HUP; "
    "trap \"exit 130\" INT; "
    "head -c \"$1\" >\"$d/fabcheck\" || { "
    "echo \"{\\\"fabkit_ship_error\\\":\\\"write_failed\\\",\\\"dir\\\":\\\"$d\\\"}\"; exit 97; }; "
    "s=$(sha256sum \"$d/fabcheck\") || { "
    "echo \"{\\\"fabkit_ship_error\\\":\\\"sha256sum_failed\\\",\\\"dir\\\":\\\"$d\\\"}\"; exit "
    "97; }; "
    "s=${s%% *}; n=$(wc -c <\"$d/fabcheck\"); "
    "[ \"$s\" = \"$2\" ] || { echo \"{\\\"fabkit_ship_error\\\":\\\"checksum_mismatch\\\","
    "\\\"expected_sha256\\\":\\\"$2\\\",\\\"got_sha256\\\":\\\"$s\\\",\\\"expected_bytes\\\":$1,"
    "\\\"got_bytes\\\":$n,\\\"path\\\":\\\"$d/fabcheck\\\"}\"; exit 98; }; "
    "chmod 0700 \"$d/fabcheck\"; shift 3; FABKIT_SHIPPED_DIR=$d \"$d/fabcheck\" \"$@\"";

// $1 sha256, $2 the copy sbcast wrote, then fabcheck's own arguments.
const char* const kFileReceiver =
    "f=$2; s=$(sha256sum \"$f\") || { "
    "echo \"{\\\"fabkit_ship_error\\\":\\\"sha256sum_failed\\\",\\\"path\\\":\\\"$f\\\"}\"; exit "
    "97; }; "
    "s=${s%% *}; "
    "[ \"$s\" = \"$1\" ] || { n=$(wc -c <\"$f\"); echo \"{\\\"fabkit_ship_error\\\":"
    "\\\"checksum_mismatch\\\",\\\"expected_sha256\\\":\\\"$1\\\",\\\"got_sha256\\\":\\\"$s\\\","
    "\\\"got_bytes\\\":$n,\\\"path\\\":\\\"$f\\\"}\"; exit 98; }; "
    "chmod 0700 \"$f\"; shift 2; FABKIT_SHIPPED_DIR=${f%/*} exec \"$f\" \"$@\"";

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
  static const std::string s = kStdinReceiver;
  return s;
}
const std::string& file_receiver_script() {
  static const std::string s = kFileReceiver;
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
    }
  }
  if (!prepare_error_.empty()) throw ShipError(prepare_error_);
}

void Shipment::make_copies() const {
  // sbcast writes to every node of the job, so the directory is made on every node: one task per
  // node. mkdir (not -p) fails on a path that exists, so nobody can have prepared it for us.
  made_dirs_ = true;  // the destructor removes whatever part of it was made
  run_step({"srun", "--nodes=" + nodes_, "--ntasks-per-node=1", "--quiet", "mkdir", "-m", "0700",
            "--", private_dir_},
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
  for (const auto& w : argv) cmd += (cmd.empty() ? "" : " ") + w;
  try {
    ChildProcess child(o);
    std::string exit = child.wait_exit(wire::deadline_in_ms(timeout_ms_));
    if (child.exited() && WIFEXITED(child.exit_status()) && WEXITSTATUS(child.exit_status()) == 0)
      return;
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
    a = {std::to_string(binary_.bytes->size()), binary_.sha256_hex, base_dir_};
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

std::optional<ShipFailure> parse_ship_failure(const Json& j) {
  if (!j.is_object() || !j.contains("fabkit_ship_error") || !j["fabkit_ship_error"].is_string())
    return std::nullopt;
  const std::string kind = j["fabkit_ship_error"].get<std::string>();
  auto field = [&](const char* k) {
    const Json& v = j.value(k, Json());
    return v.is_string() ? v.get<std::string>().substr(0, 256) : v.dump().substr(0, 64);
  };
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
