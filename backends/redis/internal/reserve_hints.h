// Copyright delayq authors.
//
// ReserveHints — which shards of a sharded namespace may have ready jobs
// of a topic, so that Reserve() asks those and leaves the others alone.
// Private to the Redis backend (sharded_backend.h).
//
// Per (topic, shard) a "may have ready work" flag with an epoch. A flag is
// set at first (nothing is known), by the shard's news (kReady of the
// topic; kResync sets every flag of the shard), by this process's own
// calls that leave work (an immediate Add(), a kick, a resume, a limit
// change) and by jobs that PromoteDue() or a reserve moved to ready. It is
// cleared when a reserve of the topic on that shard came back with fewer
// jobs than asked, held back by no limit, and no news for that (topic,
// shard) arrived since the reserve began: news that arrives during the
// call bumps the epoch and keeps the flag, so no wake-up is lost.
//
// Delayed jobs and leases come due without news, so each shard also has a
// horizon: a time before which nothing on it comes due. It is read from
// the shard's NextDue() and lowered by its kDue news and by this
// process's own calls that store a due time. A shard whose horizon has
// come counts as flagged for every topic until NextDue() is read again.
// The horizon starts unknown (InfinitePast: always due).
//
// Flags and horizons mean something only while news is heard: a store
// that does not hear the other processes' changes must ask every shard.
// While no subscription is active every shard counts as flagged, and an
// activation starts again from "everything may have work".
//
// Thread-safe.

#ifndef DELAYQ_BACKENDS_REDIS_INTERNAL_RESERVE_HINTS_H_
#define DELAYQ_BACKENDS_REDIS_INTERNAL_RESERVE_HINTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/common/mutex.h"

namespace delayq {
namespace redis_internal {

class ReserveHints {
 public:
  explicit ReserveHints(int shards);

  int shards() const { return shards_; }

  // A news subscription started delivering (after it was confirmed), or
  // stopped.
  void Activate();
  void Deactivate();

  // The shards a reserve of `topic` at `now` asks, in the order to ask
  // them: flagged (or due) shards, round robin, starting after the one
  // that served the topic last. `epochs` holds each shard's epoch for
  // Drained().
  struct Plan {
    std::vector<int> order;
    std::vector<uint64_t> epochs;  // by shard
  };
  Plan Begin(absl::string_view topic, absl::Time now);

  // Shard `shard` handed out jobs of `topic`: the next plan starts after it.
  void Served(absl::string_view topic, int shard);

  // A reserve of `topic` on `shard` that began at `epoch` came back short
  // and unlimited: clears the flag unless news came meanwhile.
  void Drained(absl::string_view topic, int shard, uint64_t epoch);

  // `topic` may have ready jobs on `shard` (news, or a call of ours).
  void Ready(int shard, absl::string_view topic);
  // ... on every shard (a resume, a limit change).
  void ReadyEverywhere(absl::string_view topic);
  // Something on `shard` comes due at `at`.
  void Due(int shard, absl::Time at);
  // News of `shard` may have been lost: anything may be there.
  void Resync(int shard);

  // For a NextDue() read of `shard`: the epoch before the read, then the
  // time it returned. A read that news overtook only lowers the horizon.
  uint64_t HorizonEpoch(int shard) const;
  void Horizon(int shard, absl::Time next_due, uint64_t epoch);

  // Whether PromoteDue() at `now` may find work on `shard`.
  bool MayBeDue(int shard, absl::Time now) const;

 private:
  struct Topic {
    std::vector<bool> flagged;
    std::vector<uint64_t> epoch;
    int next = 0;
  };
  Topic& TopicLocked(absl::string_view topic)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ResetLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int shards_;
  mutable internal::Mutex mu_;
  int active_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, Topic> topics_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> horizon_ ABSL_GUARDED_BY(mu_);
  // Bumped by every kDue and resync of the shard.
  std::vector<uint64_t> horizon_epoch_ ABSL_GUARDED_BY(mu_);
  // Bumped by every resync of the shard, and so part of every topic's
  // epoch on it.
  std::vector<uint64_t> resyncs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_INTERNAL_RESERVE_HINTS_H_
