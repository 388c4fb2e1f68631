// fabcheck pair/cluster --ship: the controller's own binary travels to each host and runs there as
// the agent, so a node needs no fabcheck installed and controller and agents are one version.
//
// The receiving side is a few lines of POSIX sh with coreutils (mktemp, head, sha256sum), which
// every node has; nothing of fabcheck's can check a copy of fabcheck that may be damaged. The
// controller computes the expected SHA-256 of its binary with OpenSSL's libcrypto (already linked
// for the session handshake), the host recomputes it with sha256sum and runs the copy only when
// they agree.
//  - ssh and templates (kStdin): the binary goes through the launcher's stdin ahead of the
//    session token. The host makes a private directory (mktemp -d: mode 0700, a fresh name),
//    checks it, reads exactly the binary's size into it (GNU head -c never reads past the count,
//    so the token stays in the pipe for the agent), checks, runs, and removes the directory when
//    the agent exits, fails or is signalled (an EXIT trap).
//  - srun (kSbcast): one copy per node for the whole run, spread by Slurm's sbcast (a tree, not
//    N streams from the controller): `srun sh -c 'mkdir -m 0700 ...'` makes the private directory
//    on every node of the allocation (mkdir fails on an existing path, so nobody can pre-plant
//    it) and checks it, sbcast writes the binary into it, every launch checks it before running
//    it, and the destructor removes the directories with one more srun step.
// The write, the checksum and the exec all go by path, so before any of them the private directory
// and every directory above it must be ones no other user can rename (the trusted-directory rule
// of common/trusted_path, in sh: kTrustedDirCheck in ship.cc); otherwise the host prints
// {"fabkit_ship_error": "unsafe_dir", ...}, runs nothing, and the controller names it
// pair.ship_unsafe_dir. A copy that does not match prints {"fabkit_ship_error":
// "checksum_mismatch", ...} and exits 98 without running it: pair.ship_checksum_mismatch.
// The shipped agent checks its own directory with common/private_dir (FABKIT_SHIPPED_DIR).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/json.h"
#include "fabric/launch/launcher.h"

namespace fabkit::launch {

enum class ShipMode { kStdin, kSbcast };
const char* to_string(ShipMode m);

// The environment variable the receiving script sets to the copy's directory for the agent.
inline constexpr const char* kShippedDirEnv = "FABKIT_SHIPPED_DIR";
// The stdin receiver's base-directory word for "the host's $TMPDIR, else /tmp" (not an absolute
// path, so no --ship-dir can be mistaken for it; not empty, which ssh would drop).
inline constexpr const char* kDefaultBaseDir = "default";
// Exit statuses of the receiving script (before the agent runs).
inline constexpr int kShipExitFailed = 97;
inline constexpr int kShipExitChecksum = 98;

struct ShipBinary {
  std::string path;                          // the controller's own binary
  std::shared_ptr<const std::string> bytes;  // its contents (kStdin writes them to each launch)
  std::string sha256_hex;
};

// Reads the file and hashes it (SHA-256, libcrypto). Throws UsageError naming the file.
ShipBinary read_ship_binary(const std::string& path);
std::string sha256_hex(const std::string& data);

// What one launch of fabcheck on a host needs: its argv and what goes to its stdin first.
struct RemoteCommand {
  std::vector<std::string> argv;
  std::shared_ptr<const std::string> stdin_payload;  // null: nothing before the token
};

class Shipment;

// `fabcheck <args>` on host through the launcher: the installed agent_path, or, with a shipment,
// the shipped copy. Throws UsageError for host names and words a remote shell would interpret.
RemoteCommand remote_fabcheck(const LauncherSpec& spec, const std::string& agent_path,
                              const Shipment* ship, const std::string& host,
                              const std::vector<std::string>& fabcheck_args);

// Thrown by Shipment's set-up steps (srun mkdir, sbcast): the command, its exit and stderr, and
// the finding code (pair.ship_failed, or pair.ship_unsafe_dir when a node refused the directory).
class ShipError : public std::runtime_error {
 public:
  explicit ShipError(const std::string& what, std::string code = "pair.ship_failed")
      : std::runtime_error(what), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// The controller's side of one run with --ship. kSbcast does its srun/sbcast steps once, at the
// first launch (prepare(): so a failure is that launch's failed step in the report), and removes
// the directories in the destructor.
class Shipment {
 public:
  // base_dir: where the private directories go on the hosts ("" = the host's $TMPDIR or /tmp
  // for kStdin, /tmp for kSbcast). Throws UsageError (no allocation for sbcast, a base_dir a
  // remote shell would interpret).
  Shipment(ShipBinary binary, const LauncherSpec& spec, std::string base_dir, int timeout_ms);
  // kSbcast: the private directory on every node and the copy in it, once; later calls return
  // at once, or throw the first call's ShipError again. Thread-safe. kStdin: nothing to do.
  void prepare() const;
  ~Shipment();
  Shipment(const Shipment&) = delete;
  Shipment& operator=(const Shipment&) = delete;

  ShipMode mode() const { return mode_; }
  const ShipBinary& binary() const { return binary_; }
  const std::string& shipped_path() const { return shipped_path_; }  // kSbcast: the copy's path
  // sh -c argv that receives (kStdin) or checks (kSbcast) the copy, then runs it with args.
  std::vector<std::string> receiver_argv(const std::vector<std::string>& args) const;

 private:
  void run_step(const std::vector<std::string>& argv, const std::string& what) const;
  void make_copies() const;
  ShipBinary binary_;
  ShipMode mode_;
  std::string base_dir_, private_dir_, shipped_path_, nodes_;
  int timeout_ms_;
  mutable std::mutex mu_;
  mutable bool prepared_ = false, made_dirs_ = false;
  mutable std::string prepare_error_, prepare_error_code_;
};

// The receiving script's error line, when `line` is one: {"code": "pair.ship_checksum_mismatch"
// | "pair.ship_unsafe_dir" | "pair.ship_failed", "message": ...}. nullopt for any other line.
struct ShipFailure {
  std::string code;
  std::string message;
};
std::optional<ShipFailure> parse_ship_failure(const Json& line);

// The receiving scripts themselves (for tests and docs), and kSbcast's `sh -c` that makes and
// checks the private directory on each node ($1: the directory).
const std::string& stdin_receiver_script();
const std::string& file_receiver_script();
const std::string& make_dir_script();

}  // namespace fabkit::launch
