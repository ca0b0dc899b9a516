// Copyright delayq authors.
//
// Input checks shared by the scheduler and the command-line program.

#ifndef DELAYQ_SRC_COMMON_VALIDATION_H_
#define DELAYQ_SRC_COMMON_VALIDATION_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/job.h"

namespace delayq {
namespace internal {

inline constexpr size_t kMaxTopicBytes = 200;
inline constexpr size_t kMaxIdBytes = 200;

// What every store keeps exactly. Redis holds times as microseconds in Lua's
// doubles, exact up to 2^52 µs (the year 2112); SQLite and memory hold more,
// but a job must read back the same from every store. So a job's run_at (and
// a retry or release time) is at most kLatestRunAt, and a duration (ttr,
// backoff) at most kLongestDuration: a lease deadline or a retry computed
// from them stays below 2^52 µs. Times are kept to the microsecond.
inline constexpr absl::Time kLatestRunAt =
    absl::FromUnixSeconds(4102444800);  // 2100-01-01T00:00:00Z
inline constexpr absl::Duration kLongestDuration =
    absl::Hours(24 * 365 * 10);  // ten years of 365 days

// The most of a failed attempt's error a job keeps (Scheduler::Fail()):
// errors are for people to read, and each is kept by the store and told to
// every listener.
inline constexpr size_t kMaxErrorBytes = 8 << 10;

// The longest prefix of `text` of at most `max_bytes` that does not end in
// the middle of a UTF-8 sequence.
absl::string_view Utf8Prefix(absl::string_view text, size_t max_bytes);

// OK for a topic of 1..200 bytes from [A-Za-z0-9._:-]; InvalidArgument naming
// the problem otherwise.
absl::Status ValidateTopic(absl::string_view topic);

// OK for an id of at most 200 bytes with no control byte (below 0x20, or
// 0x7f); "" means "generate one".
absl::Status ValidateId(absl::string_view id);

// OK for options the stores can keep: delay >= 0 and finite, run_at (when
// set) as ValidateRunAt(), 1 µs <= ttr <= kLongestDuration, max_attempts >=
// 1, 0 <= backoff durations <= kLongestDuration, the id as ValidateId(),
// and `after` as JobOptions describes it (at most kMaxDependencies ids, each
// a non-empty valid id, none twice, not the job's own, no `replace`).
absl::Status ValidateOptions(const JobOptions& options);

// OK for a time a job may become due at: from the Unix epoch to
// kLatestRunAt. `what` names it in the error ("run_at", "release time").
absl::Status ValidateRunAt(absl::Time at, absl::string_view what);

// ValidateLimit()
//
// OK for a limit the stores can run: rate and concurrency not negative and
// not both 0, burst >= 1, 0 < period <= kLongestDuration.
absl::Status ValidateLimit(const TopicLimit& limit);

// ResolveExpiry()
//
// The absolute expiry of a job with `options`, enqueued at `now` and due at
// `run_at`: the earlier of expire_at and now + expire_after, or
// absl::InfiniteFuture() for none. InvalidArgument when it is outside what
// ValidateRunAt() takes or not after `run_at`.
absl::StatusOr<absl::Time> ResolveExpiry(const JobOptions& options,
                                         absl::Time now, absl::Time run_at);

// OK for a payload of at most `max_bytes`.
absl::Status ValidatePayload(absl::string_view payload, size_t max_bytes);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_VALIDATION_H_
