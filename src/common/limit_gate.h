// Copyright delayq authors.
//
// The arithmetic of a TopicLimit, for the stores that run it in C++ (memory,
// SQLite); the Redis reserve script spells the same out in Lua.
//
// The rate is GCRA, a token bucket kept as one time: the bucket's
// "theoretical arrival time" `tat`, when it would next be empty at the
// steady rate. Reservations are `interval` = ceil(period / rate) apart; a
// reservation at `now` is allowed while max(tat, now) - now <= tolerance,
// with tolerance = interval * (burst - 1), and each one moves tat on by an
// interval. All times are µs; a fresh bucket has tat = kFreshBucket.

#ifndef DELAYQ_SRC_COMMON_LIMIT_GATE_H_
#define DELAYQ_SRC_COMMON_LIMIT_GATE_H_

#include <cstdint>
#include <limits>

#include "delayq/job.h"

namespace delayq {
namespace internal {

inline constexpr int64_t kFreshBucket = std::numeric_limits<int64_t>::min();
// "Until a reservation ends": a full concurrency cap.
inline constexpr int64_t kUntilReleased = std::numeric_limits<int64_t>::max();

class LimitGate {
 public:
  // `tat_us`: the bucket as stored; `reserved`: the topic's jobs reserved
  // now (after the expired leases were moved).
  LimitGate(const TopicLimit& limit, int64_t tat_us, int64_t now_us,
            int64_t reserved);

  // How many of `max` reservations the limit allows now.
  int64_t Allowed(int64_t max) const;

  // The bucket to store after `taken` reservations.
  int64_t TatAfter(int64_t taken) const;

  // When one more reservation is allowed after `taken` (µs, at least now),
  // or kUntilReleased when the concurrency cap is full.
  int64_t NextAllowed(int64_t taken) const;

 private:
  const TopicLimit limit_;
  const int64_t interval_us_;
  const int64_t tolerance_us_;
  const int64_t start_us_;  // max(tat, now)
  const int64_t now_us_;
  const int64_t reserved_;
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_LIMIT_GATE_H_
