// Copyright delayq authors.
//
// job.h — the vocabulary of delayq: jobs, their states, the options a producer
// gives when enqueueing, retry backoff, leases and per-topic counts.
//
// A job is a payload addressed to a topic. It starts `kDelayed` (when it has a
// delay) or `kReady`, becomes `kReserved` when a worker takes it, and leaves
// the store when the worker acknowledges it. A failed job goes back (after its
// backoff) until its attempts are used up, then it is `kDead` and kept, with
// its last error, until someone kicks it back or cancels it.
//
//   delayq::JobOptions opts;
//   opts.id = "order-42";                  // caller-chosen, unique while live
//   opts.delay = absl::Minutes(30);        // run 30 minutes from now
//   opts.backoff = delayq::Backoff::Fixed(absl::Seconds(10));
//   scheduler->Enqueue("orders.expire", "42", opts);

#ifndef DELAYQ_JOB_H_
#define DELAYQ_JOB_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace delayq {

// JobState
//
// Where a job is in its life. A job that was acknowledged or cancelled no
// longer exists, so it has no state.
enum class JobState {
  kDelayed,   // waiting for its run_at
  kReady,     // due; the next Reserve of its topic may take it
  kReserved,  // held by a worker under a lease until the lease's deadline
  kDead,      // attempts used up; kept with its last error
};

// JobStateName()
//
// "delayed", "ready", "reserved" or "dead".
absl::string_view JobStateName(JobState state);

// ParseJobState()
//
// The inverse of JobStateName(). Returns false for any other text.
bool ParseJobState(absl::string_view text, JobState* state);

// Backoff
//
// The delay before a failed job runs again. `Delay(n)` is the wait after the
// n-th failed attempt (n >= 1):
//   Fixed(d):            d for every n
//   Exponential(b, max): min(b * 2^(n-1), max)
struct Backoff {
  enum class Kind { kFixed, kExponential };

  static Backoff Fixed(absl::Duration delay);
  static Backoff Exponential(absl::Duration base, absl::Duration max);

  // Delay()
  //
  // The wait before the attempt after the `attempt`-th one. Never negative.
  absl::Duration Delay(int attempt) const;

  Kind kind = Kind::kExponential;
  absl::Duration base = absl::Seconds(1);
  absl::Duration max = absl::Minutes(10);
};

bool operator==(const Backoff& a, const Backoff& b);
inline bool operator!=(const Backoff& a, const Backoff& b) { return !(a == b); }

// JobOptions
//
// What a producer may say about a job. Every field has a default, so
// `JobOptions{}` enqueues an immediate job with a generated id.
struct JobOptions {
  // Empty: the scheduler generates a unique id. Otherwise the id must not be in
  // use by a live job (any state) or Enqueue fails with AlreadyExists. Ids are
  // at most 200 bytes.
  std::string id;
  // Run this long after enqueue. Must not be negative.
  //
  // Times and durations are kept to the microsecond, and only as far as
  // every store keeps them exactly: a job is due from the Unix epoch to
  // 2100-01-01T00:00:00Z, and ttr and backoff are at most ten years (of 365
  // days). Enqueue() refuses anything else with InvalidArgument, including
  // infinite durations and times.
  absl::Duration delay = absl::ZeroDuration();
  // When not absl::InfinitePast(), the absolute time to run; overrides `delay`.
  // A time in the past means "ready now".
  absl::Time run_at = absl::InfinitePast();
  // Time-to-run: how long a reservation lasts before the job is delivered
  // again. At least 1 µs.
  absl::Duration ttr = absl::Seconds(60);
  // Lower runs first; ties run in due-time, then enqueue, order.
  int priority = 0;
  // Reservations allowed before the job goes dead. Must be at least 1.
  int max_attempts = 3;
  // The wait before a failed job runs again.
  Backoff backoff = Backoff::Exponential(absl::Seconds(1), absl::Minutes(10));
  // Debounce: with an `id` that names a live delayed or ready job, replace
  // that job's payload and move its due time (one step; its other settings
  // and its enqueue order stay) instead of failing with AlreadyExists. A
  // reserved or dead job with the id still fails (FailedPrecondition), as
  // does one of another topic. Needs `id`; Enqueue() only, not a batch.
  bool replace = false;
};

// Job
//
// A snapshot of one job as the store holds it.
struct Job {
  std::string id;
  std::string topic;
  std::string payload;
  JobState state = JobState::kReady;
  int priority = 0;
  // Reservations made so far (a TTR expiry counts; a Release gives one back).
  int attempts = 0;
  int max_attempts = 3;
  absl::Duration ttr = absl::Seconds(60);
  Backoff backoff;
  absl::Time enqueued_at = absl::UnixEpoch();
  // When the job is (or was) due. For a reserved job: when it became due.
  absl::Time run_at = absl::UnixEpoch();
  // For a reserved job, when its lease ends; otherwise absl::InfinitePast().
  absl::Time deadline = absl::InfinitePast();
  // The error of the last failure, "" if none.
  std::string last_error;
};

// Lease
//
// A reservation of one job. `token` fences it: once the job is reserved again
// (after this lease expired), acknowledged, cancelled or released, every call
// that presents this lease fails with FailedPrecondition and changes nothing.
struct Lease {
  Job job;
  uint64_t token = 0;
  absl::Time deadline = absl::InfinitePast();
};

// TopicStats
//
// How many jobs of one topic are in each state.
struct TopicStats {
  int64_t delayed = 0;
  int64_t ready = 0;
  int64_t reserved = 0;
  int64_t dead = 0;

  int64_t total() const { return delayed + ready + reserved + dead; }
};

inline bool operator==(const TopicStats& a, const TopicStats& b) {
  return a.delayed == b.delayed && a.ready == b.ready &&
         a.reserved == b.reserved && a.dead == b.dead;
}

}  // namespace delayq

#endif  // DELAYQ_JOB_H_
