// Copyright delayq authors.
//
// SlotLocator — which node of a Redis Cluster owns a namespace's slot now.
// Private to the Redis backend.
//
// Every key of a namespace carries its hash tag ("{ns}:..."), so the whole
// store, its scripts and its news channel live in one slot, on one primary
// at a time. The locator asks the nodes it knows (the seeds given, then
// every node their maps named) for the slot map (CLUSTER SLOTS) and keeps
// the primary that serves the slot. A MOVED redirect replaces it at once
// (Use()); a connection that fails drops it, and the next call asks again,
// so a failover (a replica promoted) is followed without a restart.
//
// Thread-safe.

#ifndef DELAYQ_BACKENDS_REDIS_CLIENT_CLUSTER_H_
#define DELAYQ_BACKENDS_REDIS_CLIENT_CLUSTER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/redis/client/connection.h"
#include "backends/redis/client/locator.h"
#include "src/common/mutex.h"

namespace delayq {
namespace redis_internal {

// Redis Cluster's slots.
inline constexpr int kClusterSlots = 16384;

// KeySlot()
//
// The slot of `key`: CRC16 (XMODEM) of its hash tag (what lies between the
// first '{' and the next '}', when that is not empty) or else of the whole
// key, modulo 16384.
int KeySlot(absl::string_view key);

// Redirect
//
// What a MOVED or ASK error reply says: the slot is served by `to`, for
// good (MOVED) or for this one command (ASK, while the slot migrates).
struct Redirect {
  bool ask = false;
  HostPort to;
};
std::optional<Redirect> ParseRedirect(const redisReply* reply);

class SlotLocator final : public Locator {
 public:
  // `dial` says how to reach a node (timeouts, AUTH, TLS); its own locator
  // is not used.
  SlotLocator(std::vector<HostPort> seeds, int slot, PoolOptions dial);

  // "slot N of the cluster at h1:p1,h2:p2".
  std::string Describe() const override;

  // No: a node that does not serve the slot answers MOVED.
  bool ChecksRole() const override { return false; }

 private:
  absl::StatusOr<HostPort> Lookup() override;
  // The primary that serves slot_ in `node`'s map. Adds the nodes the map
  // names to those asked next time.
  absl::StatusOr<HostPort> Ask(const HostPort& node);
  // The nodes to ask, seeds first.
  std::vector<HostPort> Nodes() const;
  void Learn(const HostPort& node);

  const std::vector<HostPort> seeds_;
  const int slot_;
  const PoolOptions dial_;
  mutable internal::Mutex mu_;
  std::vector<HostPort> learned_ ABSL_GUARDED_BY(mu_);
};

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_CLIENT_CLUSTER_H_
