// A gloo::rendezvous::Store between the ranks themselves, over one token-authenticated TCP
// connection per non-zero rank: Gloo's FileStore needs a shared filesystem and its RedisStore a
// Redis server, and `fabcheck pair` must need neither. Rank 0 holds the key-value map and serves
// it from a thread; the others send SET/GET requests in the one framing (wire/frame.h: a request
// {"op","key_hex","value_hex"} and its response, each frame capped), every exchange bounded by an
// absolute deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "common/json.h"
#include "fabric/allreduce/session_socket.h"

namespace fabkit::fabric {

struct TokenStoreOptions {
  int rank = 0;
  int world_size = 2;
  std::string local_addr;
  std::string rank0_addr;  // where rank 0 listens (its local_addr as seen by the others)
  uint16_t port = 0;
  std::string ifname;
  std::string token;
  uint64_t plan_digest = 0;
  int timeout_ms = 10000;
};

class TokenStore : public gloo::rendezvous::Store {
 public:
  // Rank 0: listens and accepts world_size-1 authenticated peers; others connect. Throws PeerError.
  explicit TokenStore(const TokenStoreOptions& opt);
  ~TokenStore() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

  static constexpr size_t kMaxKeyBytes = 1024;
  static constexpr size_t kMaxValueBytes = 1 << 20;
  // Key and value travel as hex inside JSON: twice their bytes, plus the field names.
  static constexpr uint32_t kMaxFrameBytes = 2 * (kMaxKeyBytes + kMaxValueBytes) + 256;

 private:
  bool try_get(const std::string& key, std::vector<char>* value, wire::Deadline deadline);
  Json exchange(const Json& request, wire::Deadline deadline, const std::string& what);
  void serve();  // rank 0's thread

  TokenStoreOptions opt_;
  std::mutex mu_;
  std::map<std::string, std::vector<char>> kv_;  // rank 0 only
  std::vector<Fd> clients_;                      // rank 0: one per peer
  Fd server_;                                    // others: the connection to rank 0
  Fd stop_read_, stop_write_;                    // wakes rank 0's thread to exit
  std::thread thread_;
};

}  // namespace fabkit::fabric
