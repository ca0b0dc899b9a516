// Copyright delayq authors.
//
// job.h — the vocabulary of delayq: jobs, their states, the options a producer
// gives when enqueueing, retry backoff, leases and per-topic counts.
//
// A job is a payload addressed to a topic. It starts `kDelayed` (when it has a
// delay) or `kReady`, becomes `kReserved` when a worker takes it, and leaves
// the store when the worker acknowledges it. A failed job goes back (after its
// backoff) until its attempts are used up, then it is `kDead` and kept, with
// its last error, until someone kicks it back or cancels it. A job enqueued
// with `after` (JobOptions) starts `kWaiting` instead, until the jobs it
// waits for are done.
//
//   delayq::JobOptions opts;
//   opts.id = "order-42";                  // caller-chosen, unique while live
//   opts.delay = absl::Minutes(30);        // run 30 minutes from now
//   opts.backoff = delayq::Backoff::Fixed(absl::Seconds(10));
//   scheduler->Enqueue("orders.expire", "42", opts);

#ifndef DELAYQ_JOB_H_
#define DELAYQ_JOB_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace delayq {

// JobState
//
// Where a job is in its life. A job that was acknowledged or cancelled no
// longer exists, so it has no state, unless it is kept after its
// acknowledgement (JobOptions::keep_for): then it is done for that long.
enum class JobState {
  kDelayed,   // waiting for its run_at
  kReady,     // due; the next Reserve of its topic may take it
  kReserved,  // held by a worker under a lease until the lease's deadline
  kDead,      // attempts used up; kept with its last error
  kDone,      // acknowledged, and kept with its result (JobOptions::keep_for)
  kWaiting,   // waiting for the jobs it depends on (JobOptions::after)
};

// JobStateName()
//
// "delayed", "ready", "reserved", "dead", "done" or "waiting".
absl::string_view JobStateName(JobState state);

// IsFinished()
//
// Whether a job in `state` has finished: done or dead. It runs no more
// unless it is retried.
bool IsFinished(JobState state);

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
//
// Jitter spreads the retries of jobs that failed together (a downstream
// outage) so they do not all come back at once. With `jitter` = f (0..1),
// the wait is drawn uniformly from [(1 - f) * Delay(n), Delay(n)]:
//   0    no jitter (the default): exactly Delay(n);
//   0.5  "equal jitter": at least half the delay, the rest random;
//   1    "full jitter": anywhere from 0 to Delay(n).
// Stores keep the fraction to a millionth.
//
//   opts.backoff = delayq::Backoff::Exponential(absl::Seconds(1),
//                                               absl::Minutes(5))
//                      .WithJitter(1.0);
struct Backoff {
  enum class Kind { kFixed, kExponential };

  static Backoff Fixed(absl::Duration delay);
  static Backoff Exponential(absl::Duration base, absl::Duration max);

  // WithJitter()
  //
  // This backoff with `fraction` of jitter (see above). Must be in [0, 1];
  // Enqueue() refuses anything else with InvalidArgument.
  Backoff WithJitter(double fraction) const;

  // Delay()
  //
  // The wait before the attempt after the `attempt`-th one, without jitter
  // (the longest the jittered wait can be). Never negative.
  absl::Duration Delay(int attempt) const;

  // Jittered()
  //
  // The jittered wait for `unit`, a uniform draw from [0, 1):
  // Delay(attempt) * (1 - jitter * unit). The scheduler draws `unit` at
  // random; a test passes its own.
  absl::Duration Jittered(int attempt, double unit) const;

  Kind kind = Kind::kExponential;
  absl::Duration base = absl::Seconds(1);
  absl::Duration max = absl::Minutes(10);
  double jitter = 0.0;
};

bool operator==(const Backoff& a, const Backoff& b);
inline bool operator!=(const Backoff& a, const Backoff& b) { return !(a == b); }

// DependencyFailure
//
// What becomes of a job waiting for others (JobOptions::after) when one of
// them goes dead (attempts used up, a lapse) or leaves the store without
// being acknowledged (cancelled, purged, discarded at its expiry).
enum class DependencyFailure {
  kFail,    // the waiting job goes dead, its last error naming the dependency
  kCancel,  // the waiting job is deleted, as by Cancel()
  kRun,     // the dependency counts as met: the waiting job may still run
};

// DependencyFailureName()
//
// "fail", "cancel" or "run".
absl::string_view DependencyFailureName(DependencyFailure policy);

// ParseDependencyFailure()
//
// The inverse of DependencyFailureName(). Returns false for any other text.
bool ParseDependencyFailure(absl::string_view text, DependencyFailure* policy);

// kMaxDependencies
//
// The most jobs one job may wait for (JobOptions::after): a fan-in of as
// many children as one batch or flow request carries.
inline constexpr int kMaxDependencies = 10000;

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
  // Expiry: a job that has not been reserved by this time is never
  // delivered. No reservation is made at or after it: a job still delayed
  // or ready then (a retry waiting out its backoff included) lapses, going
  // dead with last error "expired", or leaving the store when
  // `discard_expired` is set. A job already reserved runs on; if its lease
  // runs out after the expiry, it lapses instead of being delivered again.
  // absl::InfiniteFuture() (the default) never expires. Must be after the
  // job's due time and no later than the latest run_at.
  absl::Time expire_at = absl::InfiniteFuture();
  // The same, relative to enqueue: the job expires this long after it was
  // enqueued (the earlier of the two applies when both are given).
  absl::Duration expire_after = absl::InfiniteDuration();
  // An expired job is deleted rather than kept dead.
  bool discard_expired = false;
  // Dedup window: once the job leaves the store (acked, cancelled or
  // discarded), its id stays taken for this long, so an Enqueue() with the
  // same id within the window fails with AlreadyExists as if the job were
  // still there; after it, the id is free again. Kept in the store, so it
  // holds across processes and restarts. Zero (the default) frees the id at
  // once. Needs `id`; at most ten years.
  absl::Duration unique_for = absl::ZeroDuration();
  // Retention: once acknowledged, the job stays in the store this long,
  // done, with the result its worker gave (Scheduler::Ack()): Get(),
  // List(kDone), Stats() and WaitForResult() see it, and its id stays
  // taken. Zero (the default) lets it go at once. At most ten years.
  absl::Duration keep_for = absl::ZeroDuration();
  // With keep_for: once this job is kept, its topic keeps at most this many
  // done jobs; the ones due to go soonest go first. 0 (the default) is
  // kMaxDonePerTopic, also the most that may be asked for.
  int keep_at_most = 0;
  // Dependencies: the ids of jobs this one waits for. While any of them is
  // not yet done, the job is kWaiting and no Reserve() takes it; once every
  // one of them has been acknowledged it becomes ready (delayed, if its
  // run_at is still to come). Each id must name a job that the store holds
  // when this one is enqueued (any state, a done one kept by keep_for
  // included, which counts as met at once), or an earlier job of the same
  // batch; any other id is refused with NotFound and nothing is stored. So a
  // job can only wait for jobs older than itself, and no cycle can form.
  // At most kMaxDependencies ids, none empty, none twice, not the job's own
  // id; not with `replace`. Every job of a batch waits for the same ids.
  std::vector<std::string> after;
  // What happens to this job when a job it waits for goes dead or leaves the
  // store unacknowledged (see DependencyFailure). A dependency that is
  // already dead when this job is enqueued applies it at once.
  DependencyFailure on_dependency_failure = DependencyFailure::kFail;
  // The batch (Scheduler::OpenBatch(), delayq/batch.h) this job joins; ""
  // for none. The batch must be open: an unknown one is refused with
  // NotFound, a closed one with FailedPrecondition, and nothing is stored.
  // Every job of an EnqueueBatch() joins it.
  std::string batch;
};

// kMaxDonePerTopic
//
// The most done jobs a store keeps of one topic (JobOptions::keep_at_most).
inline constexpr int kMaxDonePerTopic = 10000;

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
  // Who holds the job's lease and since when, while it is reserved: the
  // holder named by the Reserve() that made the lease (a scheduler's
  // SchedulerOptions::name, or the worker an HTTP reservation names; "" for
  // none), and the store's `now` at that Reserve() (Touch() keeps both).
  // "" and absl::InfinitePast() for a job that is not reserved.
  std::string holder;
  absl::Time reserved_at = absl::InfinitePast();
  // The error of the last failure, "" if none.
  std::string last_error;
  // When the job lapses if not reserved by then (JobOptions::expire_at);
  // absl::InfiniteFuture() for never.
  absl::Time expire_at = absl::InfiniteFuture();
  bool discard_expired = false;
  // How long the id stays taken after the job leaves the store.
  absl::Duration unique_for = absl::ZeroDuration();
  // How long the job is kept once acknowledged, and the most done jobs its
  // topic then keeps (JobOptions::keep_for, keep_at_most).
  absl::Duration keep_for = absl::ZeroDuration();
  int keep_at_most = 0;
  // When the job finished: acknowledged (done) or died (dead);
  // absl::InfinitePast() for a job that has not.
  absl::Time finished_at = absl::InfinitePast();
  // What the worker that acknowledged it returned (done jobs only).
  std::string result;
  // The ids it was enqueued to wait for (JobOptions::after), in their
  // order, for as long as the job lives; empty for a job without
  // dependencies. (A job that already waited when its store was upgraded to
  // keep these lists names only the dependencies it still waited for then.)
  std::vector<std::string> after;
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
  // When the scheduler that made the lease reserved the job, by its clock
  // (Touch() keeps it); InfinitePast() for a lease put together otherwise.
  // Ack() and Fail() tell it in their events, so that Metrics can time the
  // handler without remembering every lease.
  absl::Time reserved_at = absl::InfinitePast();
  // The results the job's dependencies (JobOptions::after) left at their
  // Ack(): id -> result, for each dependency kept done (keep_for) when the
  // job was reserved, filled by the reservation itself. A dependency whose
  // result was not kept is absent: one acked without keep_for, or whose
  // keep_for ran out (or that was cancelled) before this reservation, or one
  // that died or left under kRun. Empty for a job without dependencies.
  std::map<std::string, std::string> dependency_results;
};

// TopicStats
//
// How many jobs of one topic are in each state.
struct TopicStats {
  int64_t delayed = 0;
  int64_t ready = 0;
  int64_t reserved = 0;
  int64_t dead = 0;
  // Finished jobs kept after their acknowledgement (JobOptions::keep_for).
  int64_t done = 0;
  // Jobs waiting for others (JobOptions::after).
  int64_t waiting = 0;

  // Every job of the topic but the done ones.
  int64_t total() const { return delayed + ready + reserved + dead + waiting; }
};

// TopicLimit
//
// How fast, and how many at once, every process that shares a store may
// take a topic's jobs (Scheduler::SetLimit()). Checked by the store inside
// each reservation, so the limit holds across processes.
//
//   delayq::TopicLimit limit;
//   limit.rate = 50;                       // 50 reservations ...
//   limit.period = absl::Seconds(1);       // ... a second
//   limit.concurrency = 10;                // and at most 10 running at once
//   scheduler->SetLimit("payments", limit);
//
// The rate is a token bucket (kept as its "theoretical arrival time", GCRA):
// reservations are spaced period / rate apart (rounded up to a
// microsecond), and up to `burst` of them may go at once after a quiet
// spell. With the default burst of 1 no window of one period sees more than
// `rate` reservations.
struct TopicLimit {
  // Reservations per `period`; 0 for no rate limit.
  int64_t rate = 0;
  absl::Duration period = absl::Seconds(1);
  // How many reservations may go at once when the bucket is full (>= 1).
  int64_t burst = 1;
  // Most jobs of the topic reserved at one time; 0 for no cap.
  int64_t concurrency = 0;
};

inline bool operator==(const TopicLimit& a, const TopicLimit& b) {
  return a.rate == b.rate && a.period == b.period && a.burst == b.burst &&
         a.concurrency == b.concurrency;
}

// LimitedTopic
//
// A topic and its limit, as Scheduler::Limits() lists them.
struct LimitedTopic {
  std::string topic;
  TopicLimit limit;
};

inline bool operator==(const TopicStats& a, const TopicStats& b) {
  return a.delayed == b.delayed && a.ready == b.ready &&
         a.reserved == b.reserved && a.dead == b.dead && a.done == b.done &&
         a.waiting == b.waiting;
}

}  // namespace delayq

#endif  // DELAYQ_JOB_H_
