// Copyright delayq authors.
//
// backend.h — the storage interface every delayq store implements.
//
// A Backend holds jobs and moves them between states. The Scheduler owns the
// clock, the timing wheel, validation and events; the Backend owns the data.
// Every method is ONE atomic transition of the store: a crash of any process
// at any point leaves each job either before or after the call, never half
// way. A job leaves the store only through Ack() or Cancel().
//
// Backends never read a clock. Every call that depends on time takes `now`,
// so a store behaves the same under a SimulatedClock as under the real one
// (the Redis backend may be configured to use the server's TIME instead).
// Stores keep times to the millisecond at least and may truncate below that.
//
// Ready order: among a topic's ready jobs, lower priority first, then earlier
// run_at, then enqueue order. A job gets its place in enqueue order when it is
// added and keeps it for life (through retries, releases, redeliveries and
// kicks).
//
// Errors (codes are part of the contract; the conformance suite checks them):
//   NotFound            the id names no live job
//   AlreadyExists       Add() with the id of a live job
//   FailedPrecondition  a token that is not the current reservation of a live
//                       job, or KickJob() of a job that is not dead
//   InvalidArgument     a malformed argument the store itself rejects
//   Unavailable         the store cannot be reached; nothing was changed, or
//                       (for a lost reply) the change may or may not have
//                       happened — callers retry idempotent calls
//   DeadlineExceeded    the store did not answer within its timeout
// Backends do not validate topics, payload sizes or option ranges; the
// Scheduler does that before calling them.
//
// Thread-safety: every method may be called concurrently from many threads,
// and (for SQLite and Redis) from many processes on the same store.
//
// Implementations hide behind factories (see open.h): `NewMemoryBackend()`,
// `OpenSqliteBackend()`, `OpenRedisBackend()`, or `OpenBackend(url)`.

#ifndef DELAYQ_BACKEND_H_
#define DELAYQ_BACKEND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "delayq/batch.h"
#include "delayq/counts.h"
#include "delayq/event_log.h"
#include "delayq/job.h"
#include "delayq/schedule.h"

namespace delayq {

// NewJob
//
// A job as handed to Backend::Add(): every field already validated and
// resolved (id generated, run_at absolute).
struct NewJob {
  std::string id;
  std::string topic;
  std::string payload;
  int priority = 0;
  int max_attempts = 3;
  absl::Duration ttr = absl::Seconds(60);
  Backoff backoff;
  absl::Time run_at = absl::UnixEpoch();
  // Expiry and dedup window, as in JobOptions (expire_at resolved to an
  // absolute time, absl::InfiniteFuture() for none).
  absl::Time expire_at = absl::InfiniteFuture();
  bool discard_expired = false;
  absl::Duration unique_for = absl::ZeroDuration();
  // Retention once acknowledged, as in JobOptions (keep_at_most resolved:
  // 1..kMaxDonePerTopic when keep_for > 0).
  absl::Duration keep_for = absl::ZeroDuration();
  int keep_at_most = 0;
  // Dependencies, as in JobOptions (see "Dependencies" at Add()).
  std::vector<std::string> after;
  DependencyFailure on_dependency_failure = DependencyFailure::kFail;
  // The batch the job joins (see "Batches" at OpenBatch()); "" for none.
  std::string batch;
};

// kReservePromoteLimit
//
// The most due jobs one Backend::Reserve() moves before it reserves.
inline constexpr int kReservePromoteLimit = 1000;

// Transition
//
// One job moved by Backend::PromoteDue().
struct Transition {
  enum class Kind {
    kPromoted,  // delayed -> ready: its run_at came
    kExpired,   // reserved -> ready: its lease deadline passed, attempts left
    kDead,      // reserved -> dead: its lease deadline passed, no attempts left
    kLapsed,    // delayed, ready or expired reservation -> dead with last
                // error "expired": its expire_at came before a reservation
    kDiscarded,  // the same for a job with discard_expired: deleted
  };
  Kind kind;
  std::string id;
  std::string topic;
  int attempts = 0;
};

// Settled
//
// A job that a store moved because of another job's transition, in the
// same atomic step: a dependant whose dependency was acknowledged, went
// dead or left the store (see "Dependencies" at Backend::Add()), or a
// batch's completion job whose batch finished (see Backend::OpenBatch()).
// The calls that can settle jobs report them (each call says where), so
// that the caller can tell of transitions of jobs it did not name. A job
// that settles its own dependants in turn comes before them.
struct Settled {
  enum class Kind {
    kReady,      // waiting -> ready
    kDelayed,    // waiting -> delayed: its run_at is still to come
    kDead,       // waiting -> dead: a dependency failed or left (kFail)
    kCancelled,  // deleted: a dependency failed or left (kCancel)
  };
  Kind kind = Kind::kReady;
  std::string id;
  std::string topic;
  // kDead: the last_error the job was given (naming the dependency).
  std::string error;
};

// PromoteResult
//
// What one Backend::PromoteDue() call did.
struct PromoteResult {
  std::vector<Transition> transitions;
  // The jobs the moved ones settled (a death's dependants).
  std::vector<Settled> settled;
  // True when the call stopped at its limit and more due jobs may remain.
  bool more = false;
};

// ReserveReport
//
// Who asks for one Backend::Reserve() (`holder`, set by the caller), and
// what the call did besides the leases it returns (the rest, set by the
// store).
struct ReserveReport {
  // The holder each lease the call makes is stored with (Job::holder), so
  // that every process sees who holds a lease: a scheduler's name, or the
  // worker an HTTP client names. "" (also with no report) for none.
  std::string holder;
  // Every job the call moved before it reserved (see Reserve()).
  std::vector<Transition> moved;
  // The jobs those moves settled, and in AckAndReserve() those the ack
  // settled, in the order settled.
  std::vector<Settled> settled;
  // Set when the topic's limit (SetLimit()) held back ready jobs: the
  // earliest time a Reserve() of the topic may get one, when the rate limit
  // held them back; absl::InfiniteFuture() when the concurrency cap did (a
  // reservation of the topic must end first). absl::InfinitePast() when
  // the limit held nothing back.
  absl::Time limited_until = absl::InfinitePast();
};

// FailOutcome
//
// Where Backend::Fail() sent the job.
enum class FailOutcome {
  kRetry,  // delayed until the given retry time (or ready if it has passed)
  kDead,   // attempts used up; dead with the error kept
};

// AckReserved
//
// What one Backend::AckAndReserve() did: the ack's outcome and the
// reservation's, each as Ack() and Reserve() would give it.
struct AckReserved {
  absl::Status acked;
  absl::StatusOr<std::vector<Lease>> leases;
};

// JobPage
//
// One page of a job list (Backend::ListPage()).
struct JobPage {
  std::vector<Job> jobs;
  // Gives the next page; "" when this page reached the end of the list.
  std::string next_cursor;
};

// StoreNews
//
// A change to a shared store that a scheduler waiting on it must hear of
// promptly, announced by the store to every subscriber (see
// Backend::Subscribe()). Only edges are announced, not every job, so a busy
// queue pays almost nothing for them.
struct StoreNews {
  enum class Kind {
    // `topic` had no ready job and now has at least one (an immediate job
    // was added, a job was promoted, released, retried at once or kicked).
    kReady,
    // Something comes due at `at` (a delayed job's run_at or a lease's
    // deadline) that may be earlier than anything a subscriber knew of.
    kDue,
    // News may have been lost (the subscription dropped and came back):
    // read the store again.
    kResync,
    // A schedule was stored or removed (PutSchedule(), RemoveSchedule()):
    // read the schedules again.
    kSchedules,
  };
  Kind kind = Kind::kResync;
  std::string topic;                       // kReady only
  absl::Time at = absl::InfiniteFuture();  // kDue only
};

// NewsCallback
//
// Receives StoreNews. Called from a thread of the store's, one call at a
// time; it must be quick and must not call back into the Backend.
using NewsCallback = std::function<void(const StoreNews&)>;

// NewsSubscription
//
// Delivers news while it lives. Destroying it stops the deliveries: once the
// destructor returns, no callback is running or will run. Must be destroyed
// before the Backend that made it.
class NewsSubscription {
 public:
  NewsSubscription() = default;
  NewsSubscription(const NewsSubscription&) = delete;
  NewsSubscription& operator=(const NewsSubscription&) = delete;
  virtual ~NewsSubscription() = default;
};

// Backend
class Backend {
 public:
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  virtual ~Backend() = default;

  // Name()
  //
  // A short name for logs and benchmarks: "memory", "sqlite", "redis".
  virtual std::string Name() const = 0;

  // Add()
  //
  // Stores `jobs` with attempts 0: each one kDelayed when its run_at is after
  // `now`, kReady otherwise; enqueued_at = `now`. All or nothing: if any id
  // is live, held by a dedup window (below), or appears twice in `jobs`,
  // returns AlreadyExists naming it and stores none.
  //
  // Dedup window: when a job with unique_for > 0 leaves the store (Ack(),
  // Cancel(), or a lapse that discards it) at `now` of that call, its id
  // stays held until now + unique_for: Add() of the id at a time before
  // that fails as above; at or after it, the id is free. Held ids are kept
  // with the jobs (they survive restarts) and are dropped once they pass. Among
  // jobs due at the same time and priority, the order of `jobs` (and of Add()
  // calls) is the order they are reserved in.
  //
  // Dependencies. A job with `after` waits for those jobs. Each id must name
  // a job the store holds at `now` (any state; done ones included), or a job
  // earlier in `jobs`; otherwise Add() returns NotFound naming the id and
  // stores none. A dependency that is done counts as met at once; one that
  // is dead applies the job's policy at once (below); every other one is
  // pending. A job with a pending dependency is stored kWaiting: it is never
  // due, never reserved, not in NextDue(), does not lapse while it waits,
  // and shows in Get(), List(kWaiting) (enqueue order) and Stats().waiting.
  // Each transition of a dependency settles its dependants in the same
  // atomic step, so no completion is missed or counted twice:
  //   * Ack() (kept done or deleted): the dependency is met. A dependant
  //     whose last pending dependency this was becomes ready at once, or
  //     delayed when its run_at is after `now`, exactly once.
  //   * going dead (Fail(), an expired last lease, a lapse) or leaving
  //     unacknowledged (Cancel(), PurgeDead(), a discarded lapse): each
  //     dependant's on_dependency_failure applies — kFail: dead with
  //     last_error "dependency <id> failed" (or "... was cancelled");
  //     kCancel: deleted as by Cancel(); kRun: the dependency counts as met.
  //     A dependant that goes dead or is deleted so settles its own
  //     dependants in turn.
  // A dependency that is kicked back from dead afterwards does not revive
  // dependants it failed. Cancel() of a waiting job removes it from its
  // dependencies' lists. Replace() refuses a waiting job (FailedPrecondition).
  // A store that cannot hold dependencies refuses a job with `after` with
  // Unimplemented naming the store (and stores none).
  //
  // A job with a `batch` joins that batch (see OpenBatch()): NotFound when
  // no batch has the id, FailedPrecondition when it is closed, and nothing
  // is stored. A store that cannot keep batches refuses such a job with
  // Unimplemented naming the store (and stores none).
  virtual absl::Status Add(absl::Span<const NewJob> jobs, absl::Time now) = 0;

  // CheckAddInOneStep()
  //
  // Whether Add() stores `jobs` in one atomic step, so that a crash of the
  // calling process at any point leaves all of them stored or none: OK when
  // it does, else InvalidArgument saying why and what to change. Depends on
  // the jobs alone (their ids), not on what the store holds, and changes
  // nothing. Scheduler::EnqueueFlow(), which promises a flow all or nothing,
  // asks before it writes. The default is OK: a store whose every Add() is
  // one transaction or one script. A sharded Redis namespace stores jobs of
  // one shard in one step and refuses jobs whose ids lie on several.
  virtual absl::Status CheckAddInOneStep(absl::Span<const NewJob> jobs) const {
    (void)jobs;
    return absl::OkStatus();
  }

  // PlacesIdsByHashTag()
  //
  // Whether the store places each job by its id's hash tag (what lies
  // between the id's first '{' and the next '}', when that is not empty;
  // else by the whole id), so that only jobs whose ids share a tag are sure
  // to be stored together, in one step (CheckAddInOneStep()). Code that
  // makes up ids for jobs to be stored together gives them one tag on such
  // a store (Scheduler::EnqueueFlow() does). The default is false: where a
  // job lies does not depend on its id. True for a sharded Redis namespace.
  virtual bool PlacesIdsByHashTag() const { return false; }

  // Reserve()
  //
  // Reserves up to `max` jobs of `topic` and returns their leases in reserve
  // order (empty when none is due). Sees the jobs due at `now`: delayed jobs
  // with run_at <= now and reservations whose deadline is <= now count as
  // ready even if PromoteDue() has not run (an expired reservation of a job
  // with no attempts left goes dead instead) — the earliest
  // kReservePromoteLimit of them, when more are due. Each reserved job gets
  // attempts + 1, deadline = max(now, run_at) + ttr and a fresh token never
  // issued before for that job. (The max matters when `now` is behind the
  // clock that found the job due, another process's or one that moved on
  // since `now` was read: the lease still gets its whole ttr.)
  //
  // Expiry: no job is reserved at or after its expire_at; the step below
  // lapses it instead (see PromoteDue()).
  //
  // Precisely: the call first moves the due jobs of `topic` as PromoteDue()
  // would, earliest first and at most kReservePromoteLimit of them (when no
  // more were due, none is still stored delayed or reserved past its
  // deadline afterwards), then reserves the first `max` ready jobs in ready
  // order (none while the topic is paused, see SetPaused(); no more than
  // its limit allows, see SetLimit()). The bound
  // keeps one call short (SQLite's write lock, Redis's one
  // thread) however many jobs came due at once; the rest move with the next
  // calls and with PromoteDue(), which the scheduler runs in batches. A job
  // that went back to ready because its lease expired keeps its run_at. When
  // `moved` is not null, every job the first step moved is appended to it, as
  // PromoteDue() would report it (in any order), so the caller can report
  // promotions, expiries and deaths it did not see happen. When `report`
  // is not null, the moved jobs are appended to report->moved and, when the
  // limit held ready jobs back, report->limited_until says until when.
  // Each reserved job is stored with holder = report->holder ("" with no
  // report) and reserved_at = `now`, which Get() and List() show while it
  // stays reserved (Touch() keeps both; they go with the lease).
  // REQUIRES: max >= 1.
  virtual absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic,
                                                     int max, absl::Time now,
                                                     ReserveReport* report) = 0;

  // Reserve() that reports only the moved jobs (to `moved`, when not null).
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Time now,
                                             std::vector<Transition>* moved) {
    if (moved == nullptr) {
      return Reserve(topic, max, now, static_cast<ReserveReport*>(nullptr));
    }
    ReserveReport report;
    absl::StatusOr<std::vector<Lease>> leases =
        Reserve(topic, max, now, &report);
    for (Transition& t : report.moved) moved->push_back(std::move(t));
    return leases;
  }

  // Reserve() without a report.
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Time now) {
    return Reserve(topic, max, now, static_cast<ReserveReport*>(nullptr));
  }

  // Ack()
  //
  // Deletes the job reserved under `token`, or, when it has a keep_for,
  // keeps it done: with `result`, finished_at = now, no lease, until
  // now + keep_for (see "Done jobs" below). FailedPrecondition, changing
  // nothing, if `token` is not the current reservation of a live job — also
  // when the job no longer exists (a lease always named a job once). The
  // scheduler bounds `result` (SchedulerOptions::max_result_bytes); a store
  // keeps what it is given.
  //
  // Done jobs. A done job keeps its id taken (Add() fails as for a live
  // job; Kick(), PromoteJob() and the lease calls refuse it), shows in
  // Get(), List(kDone) (earliest to leave first) and Stats().done, and
  // leaves the store by Cancel() or once its time, finished_at + keep_for,
  // is up: the first PromoteDue(), or Ack() of its topic, at or after that
  // time deletes it (reads show it until then). When an Ack() keeps a job,
  // its topic keeps at most the job's keep_at_most done jobs: the ones due
  // to leave soonest (ties: acknowledged first) leave at once. Keeping a job
  // is not news, and a done job is never due (NextDue() ignores it). Dead
  // jobs have a finished_at too: when they died.
  //
  // Settled jobs. When `settled` is not null, the jobs the call settled
  // (Settled) are appended to it, in the order settled; nothing is appended
  // when the call fails. Fail(), Cancel(), PurgeDead(), AckBatch() and
  // CloseBatch() report theirs the same way; PromoteDue() and Reserve()
  // in their results. Reporting them costs a job that settles nothing no
  // extra work.
  virtual absl::Status Ack(absl::string_view id, uint64_t token,
                           absl::string_view result, absl::Time now,
                           std::vector<Settled>* settled) = 0;

  // Ack() that reports no settled jobs.
  absl::Status Ack(absl::string_view id, uint64_t token,
                   absl::string_view result, absl::Time now) {
    return Ack(id, token, result, now, nullptr);
  }

  // AckBatch()
  //
  // Acks every lease, each on its own terms as by Ack() with no result: a
  // lease that is not current gets FailedPrecondition in its slot and the
  // others still go; the
  // same lease twice is acked once and stale the second time. Returns one
  // status per lease, in order. A store that acks the batch in one
  // transaction or round trip fails the whole call when it could not be
  // asked (then which leases were acked is unknown, or none on a store that
  // rolls back). A store that asks in parts puts a part's error in the slots
  // of that part's leases: this default, which acks one lease at a time, and
  // a sharded Redis. `settled` as for Ack(), for every lease acked.
  virtual absl::StatusOr<std::vector<absl::Status>> AckBatch(
      absl::Span<const Lease> leases, absl::Time now,
      std::vector<Settled>* settled) {
    std::vector<absl::Status> out;
    out.reserve(leases.size());
    for (const Lease& l : leases) {
      out.push_back(Ack(l.job.id, l.token, /*result=*/"", now, settled));
    }
    return out;
  }

  // AckBatch() that reports no settled jobs.
  absl::StatusOr<std::vector<absl::Status>> AckBatch(
      absl::Span<const Lease> leases, absl::Time now) {
    return AckBatch(leases, now, nullptr);
  }

  // AckAndReserve()
  //
  // A worker that finished a job and goes straight on to the next: Ack() of
  // `id` under `token` with `result`, then Reserve() of up to `max` jobs of
  // `topic` (any topic of the store), both at `now`, each with the outcome
  // it would have alone, in `acked` and `leases`. The ack comes first, so
  // the lease it ends frees a place under the topic's concurrency cap and
  // the reservation's promotion step cannot move the acked job's lease
  // first. A refused ack (FailedPrecondition) changes nothing and the
  // reservation still goes ahead. When the store could not be asked, or did
  // not answer, both carry the error; neither part is then known to have
  // happened (a reservation whose reply was lost comes back when its
  // deadline passes, as after Reserve()). `report` as for Reserve(); the
  // jobs the ack settled come first in report->settled.
  //
  // This default asks the two in turn, and does not reserve when the ack
  // failed for any reason but a stale token (the same error is put in
  // `leases`); a store that can do both in one transaction or round trip
  // overrides it. REQUIRES: max >= 1.
  virtual AckReserved AckAndReserve(absl::string_view id, uint64_t token,
                                    absl::string_view result,
                                    absl::string_view topic, int max,
                                    absl::Time now, ReserveReport* report) {
    AckReserved out;
    out.acked = Ack(id, token, result, now,
                    report == nullptr ? nullptr : &report->settled);
    if (!out.acked.ok() && !absl::IsFailedPrecondition(out.acked)) {
      out.leases = out.acked;
      return out;
    }
    out.leases = Reserve(topic, max, now, report);
    return out;
  }

  // Fail()
  //
  // Ends the reservation `token` as failed, keeping `error` as last_error. If
  // attempts < max_attempts the job becomes delayed until `retry_at` (ready
  // if retry_at <= now), run_at = retry_at, and kRetry is returned; otherwise
  // it goes dead (run_at unchanged) and kDead is returned. Errors as for
  // Ack(); `settled` as for Ack() (a death's dependants).
  virtual absl::StatusOr<FailOutcome> Fail(absl::string_view id, uint64_t token,
                                           absl::string_view error,
                                           absl::Time retry_at, absl::Time now,
                                           std::vector<Settled>* settled) = 0;

  // Fail() that reports no settled jobs.
  absl::StatusOr<FailOutcome> Fail(absl::string_view id, uint64_t token,
                                   absl::string_view error, absl::Time retry_at,
                                   absl::Time now) {
    return Fail(id, token, error, retry_at, now, nullptr);
  }

  // Release()
  //
  // Ends the reservation `token` without counting it: attempts - 1, the job
  // delayed until `run_at` (ready if run_at <= now), run_at = `run_at`;
  // last_error unchanged. Errors as for Ack().
  virtual absl::Status Release(absl::string_view id, uint64_t token,
                               absl::Time run_at, absl::Time now) = 0;

  // Touch()
  //
  // Extends the reservation `token` to now + ttr and returns the new
  // deadline. Errors as for Ack(); a reservation whose deadline already
  // passed is still current, and may be touched (or acked, failed,
  // released), until a Reserve() of its topic or a PromoteDue() moves it.
  virtual absl::StatusOr<absl::Time> Touch(absl::string_view id, uint64_t token,
                                           absl::Time now) = 0;

  // Cancel()
  //
  // Deletes the job in any state. A lease on it becomes stale. NotFound if
  // the id names no live job. `settled` as for Ack().
  virtual absl::Status Cancel(absl::string_view id, absl::Time now,
                              std::vector<Settled>* settled) = 0;

  // Cancel() that reports no settled jobs.
  absl::Status Cancel(absl::string_view id, absl::Time now) {
    return Cancel(id, now, nullptr);
  }

  // Get()
  //
  // A snapshot of the job. NotFound if the id names no live job. The state
  // is as stored: a delayed job whose run_at passed is still kDelayed until
  // it is promoted or reserved.
  virtual absl::StatusOr<Job> Get(absl::string_view id) = 0;

  // List()
  //
  // Up to `limit` jobs of `topic` in `state`, in the order they would be
  // reserved (ready), become due (delayed, by run_at), expire (reserved, by
  // deadline), or died in (dead, oldest first). Only the ready order is exact
  // among equal keys; jobs with the same run_at, deadline or death call may
  // come in any order among themselves.
  virtual absl::StatusOr<std::vector<Job>> List(absl::string_view topic,
                                                JobState state, int limit) = 0;

  // ListPage()
  //
  // One page of List(): up to `limit` jobs of `topic` in `state`, in List()'s
  // order, starting after the position `cursor` names ("" for the first
  // page), with the cursor of the next page in `next_cursor` ("" when the
  // page reached the end of the list). The cursor is opaque text (letters,
  // digits, '-' and '_') that names a position in the order, not a job, so
  // a page is found by its key (no counting of the jobs before it) and the
  // job it ended on may leave meanwhile. A cursor is good for the store,
  // topic and state that gave it; InvalidArgument for text that is not such
  // a cursor, or one of another state's list. Paging on while jobs come and
  // go, a job that stays in `state` (and keeps its place in the order) from
  // the first page to the last is seen exactly once; a job that enters or
  // leaves the state meanwhile, or moves in the order, may be seen once,
  // twice or not at all. Concatenated pages of a list that does not change
  // are List() of the whole list, with no job twice. REQUIRES: limit >= 1.
  // The default, for a store written before pages, is Unimplemented.
  virtual absl::StatusOr<JobPage> ListPage(absl::string_view topic,
                                           JobState state, int limit,
                                           absl::string_view cursor) {
    (void)topic, (void)state, (void)limit, (void)cursor;
    return absl::UnimplementedError(
        absl::StrCat(Name(), ": this store cannot list jobs by pages"));
  }

  // Stats()
  //
  // Counts of the topic's jobs per stored state. An unknown topic has all
  // zeros (not an error).
  virtual absl::StatusOr<TopicStats> Stats(absl::string_view topic) = 0;

  // Topics()
  //
  // Every topic that has at least one live job, sorted.
  virtual absl::StatusOr<std::vector<std::string>> Topics() = 0;

  // Kick()
  //
  // Moves up to `max` dead jobs of `topic` (oldest death first) back to
  // ready with attempts reset to 0 and run_at = now (last_error kept), and
  // returns how many moved.
  virtual absl::StatusOr<int> Kick(absl::string_view topic, int max,
                                   absl::Time now) = 0;

  // KickJob()
  //
  // Moves one dead job back to ready as Kick() does. NotFound if
  // the id names no live job; FailedPrecondition if the job is not dead.
  virtual absl::Status KickJob(absl::string_view id, absl::Time now) = 0;

  // KickIds()
  //
  // Kick() that returns the ids of the jobs it moved, in the order it moved
  // them, so that their events can name them. The default, for a store
  // written before it, is Unimplemented: the scheduler then calls Kick()
  // and tells no event of each job.
  virtual absl::StatusOr<std::vector<std::string>> KickIds(
      absl::string_view topic, int max, absl::Time now) {
    (void)topic, (void)max, (void)now;
    return absl::UnimplementedError(
        absl::StrCat(Name(), ": this store cannot name the jobs it kicks"));
  }

  // PromoteJob()
  //
  // Runs a delayed job now: ready, with run_at = now; attempts, expiry and
  // enqueue order kept (a job waiting for its retry runs its next attempt
  // now). NotFound if the id names no live job; FailedPrecondition if the
  // job is not delayed. Announced as a job made ready. The default, for a
  // store written before it, is Unimplemented.
  virtual absl::Status PromoteJob(absl::string_view id, absl::Time now) {
    (void)id, (void)now;
    return absl::UnimplementedError(
        absl::StrCat(Name(), ": this store cannot promote one job"));
  }

  // PurgeDead()
  //
  // Deletes up to `max` dead jobs of `topic`, oldest death first, each as
  // Cancel() deletes it (its id held for its dedup window), and returns how
  // many went. `settled` as for Ack(). REQUIRES: max >= 1. The default is
  // Unimplemented.
  virtual absl::StatusOr<int> PurgeDead(absl::string_view topic, int max,
                                        absl::Time now,
                                        std::vector<Settled>* settled) {
    (void)topic, (void)max, (void)now, (void)settled;
    return absl::UnimplementedError(
        absl::StrCat(Name(), ": this store cannot purge dead jobs"));
  }

  // PurgeDead() that reports no settled jobs.
  absl::StatusOr<int> PurgeDead(absl::string_view topic, int max,
                                absl::Time now) {
    return PurgeDead(topic, max, now, nullptr);
  }

  // PromoteDue()
  //
  // Moves up to `limit` due jobs, across all topics: delayed jobs with
  // run_at <= now become ready; reservations with deadline <= now become
  // ready again (kExpired) or, when their attempts are used up, dead with
  // last_error "lease expired" (kDead); run_at is kept either way. A job
  // whose expire_at <= now and that would be (or is) ready or delayed
  // lapses instead: dead with last_error "expired" (kLapsed), or deleted
  // when it has discard_expired (kDiscarded, holding its id as Cancel()
  // would). Earliest due first (jobs due at the same time in any order;
  // a job is due at the earliest of its run_at, lease deadline or
  // expire_at that applies to its state). Sets `more` when it
  // stopped at `limit`. Callers loop while `more` is set. The jobs the
  // deaths and discards settled are in `settled`.
  // REQUIRES: limit >= 1.
  virtual absl::StatusOr<PromoteResult> PromoteDue(absl::Time now,
                                                   int limit) = 0;

  // NextDue()
  //
  // The earliest time at which PromoteDue() will have work: the smallest
  // run_at of a delayed job, deadline of a reservation or expire_at of a
  // delayed or ready job, across all topics.
  // absl::InfiniteFuture() when there is none.
  virtual absl::StatusOr<absl::Time> NextDue() = 0;

  // Replace()
  //
  // Debounce: the live job `job.id`, delayed or ready and of `job.topic`,
  // gets `job.payload` and `job.run_at` in one step (delayed when run_at >
  // now, else ready); its other settings, enqueue order and attempts stay.
  // NotFound when no live job has the id; FailedPrecondition when it is
  // reserved or dead, or of another topic. Announced as Add() would be.
  // The default, for a store written before jobs could be replaced, is
  // Unimplemented.
  virtual absl::Status Replace(const NewJob& job, absl::Time now) {
    (void)job, (void)now;
    return absl::UnimplementedError(
        absl::StrCat(Name(), ": this store cannot replace jobs"));
  }

  // SetPaused()
  //
  // Pauses `topic` (or resumes it) for every process that shares the store:
  // while it is paused, Reserve() of it reserves nothing, though its jobs
  // still become due (Reserve() and PromoteDue() still move them) and wait
  // as ready. Kept with the jobs, so it survives restarts. Pausing a paused
  // topic, or resuming one that is not, changes nothing. A store that
  // announces news announces kReady for a resumed topic that has ready
  // jobs, so that waiting workers look again. The default, for a store
  // written before topics could be paused, is Unimplemented.
  virtual absl::Status SetPaused(absl::string_view topic, bool paused,
                                 absl::Time now) {
    (void)topic, (void)paused, (void)now;
    return absl::UnimplementedError(
        absl::StrCat(Name(), ": this store cannot pause topics"));
  }

  // PausedTopics()
  //
  // Every paused topic, sorted.
  virtual absl::StatusOr<std::vector<std::string>> PausedTopics() {
    return std::vector<std::string>();
  }

  // SetLimit()
  //
  // Limits how fast, and how many at once, Reserve() of `topic` hands out
  // jobs, for every process that shares the store (see TopicLimit): a call
  // reserves no more than the rate allows at `now` and no more than keeps
  // the topic's reserved jobs within `concurrency`, and reports when the
  // limit held jobs back (ReserveReport). The token bucket is kept with the
  // jobs and checked in the same step as the reservation. Setting a topic's
  // limit again replaces it and keeps the bucket's state; a limit survives
  // restarts until ClearLimit(). A store that announces news announces
  // kReady for a topic whose concurrency cap was full when one of its
  // reservations ended (Ack(), Fail(), Release(), Cancel()) while it has
  // ready jobs, so waiting workers look again; and for a topic whose limit
  // was set or cleared while it has ready jobs. The caller validates `limit`.
  // The default, for a store written before topics could be limited, is
  // Unimplemented.
  virtual absl::Status SetLimit(absl::string_view topic,
                                const TopicLimit& limit, absl::Time now) {
    (void)topic, (void)limit, (void)now;
    return absl::UnimplementedError(
        absl::StrCat(Name(), ": this store cannot limit topics"));
  }

  // ClearLimit()
  //
  // Removes `topic`'s limit (none: no change).
  virtual absl::Status ClearLimit(absl::string_view topic, absl::Time now) {
    (void)topic, (void)now;
    return absl::UnimplementedError(
        absl::StrCat(Name(), ": this store cannot limit topics"));
  }

  // Limits()
  //
  // Every limited topic with its limit, sorted by topic.
  virtual absl::StatusOr<std::vector<LimitedTopic>> Limits() {
    return std::vector<LimitedTopic>();
  }

  // PutSchedule()
  //
  // Stores `schedule` under its name, replacing the definition (spec, topic,
  // payload, options) of a schedule with that name. Its done_through: `now`
  // for a new schedule and for one whose spec or time zone changes (its
  // occurrences count from then on); otherwise the stored one, so storing
  // the same definition again (every process does at its start) loses no
  // occurrence missed meanwhile. schedule.done_through and .revision are
  // ignored; the revision changes. Backends do not validate schedules; the
  // Scheduler does. The default, for a store written before schedules, is
  // Unimplemented (as for every schedule call).
  virtual absl::Status PutSchedule(const ScheduleRecord& schedule,
                                   absl::Time now) {
    (void)schedule, (void)now;
    return NoSchedules();
  }

  // RemoveSchedule()
  //
  // Deletes the schedule. Jobs it already enqueued stay. NotFound if no
  // schedule has the name.
  virtual absl::Status RemoveSchedule(absl::string_view name, absl::Time now) {
    (void)name, (void)now;
    return NoSchedules();
  }

  // ListSchedules()
  //
  // Every schedule, sorted by name.
  virtual absl::StatusOr<std::vector<ScheduleRecord>> ListSchedules() {
    return NoSchedules();
  }

  // FireSchedule()
  //
  // Enqueues occurrences: in one step, adds `jobs` (as Add() would, all or
  // nothing; may be empty, when the occurrences are passed over) and sets
  // the schedule's done_through to `through` — only if the schedule's
  // revision is still `revision`, so that of several processes running the
  // same schedule exactly one enqueues each occurrence. AlreadyExists,
  // changing nothing, when the revision moved on (another call fired or
  // changed the schedule: read it again) or when a job's id is live (as
  // Add()); NotFound if no schedule has the name. Announced as Add() would
  // be.
  virtual absl::Status FireSchedule(absl::string_view name, int64_t revision,
                                    absl::Time through,
                                    absl::Span<const NewJob> jobs,
                                    absl::Time now) {
    (void)name, (void)revision, (void)through, (void)jobs, (void)now;
    return NoSchedules();
  }

  // Counts()
  //
  // Every topic's counts per minute (see counts.h) for the minutes from the
  // one that holds `from` to the one that holds `to`, as far as the store's
  // window keeps them; minutes in which a topic had nothing counted are left
  // out. Sorted by minute, then topic. Each call counts its transitions in
  // the minute of its `now` (a store on the server's clock: of that clock):
  //   * Add(), FireSchedule(): enqueued, per job;
  //   * Reserve(): per lease, lateness[LatenessBucket(now - run_at)];
  //   * Ack(), AckBatch(): done, per job acked;
  //   * Fail(): failed, and retried (kRetry) or dead (kDead);
  //   * a move (PromoteDue(), or Reserve()'s first step): kExpired counts
  //     expired; kDead, expired and dead; kLapsed, lapsed and dead;
  //     kDiscarded, lapsed.
  // Release(), Touch(), Cancel(), Replace() and Kick() count nothing. The
  // default, for a store written before counts, is Unimplemented.
  virtual absl::StatusOr<std::vector<TopicMinute>> Counts(absl::Time from,
                                                          absl::Time to) {
    (void)from, (void)to;
    return NoCounts();
  }

  // CountTotals()
  //
  // Every counted topic's totals since it was first counted, sorted by
  // topic. They only grow.
  virtual absl::StatusOr<std::vector<TopicTotals>> CountTotals() {
    return NoCounts();
  }

  // AppendEvents()
  //
  // Adds `events` to the store's event log (event_log.h), in order, after
  // every event already there; the oldest leave once it holds more than its
  // max_events. Nothing is checked against the jobs: the log tells what
  // processes did. The default, for a store without a log, is
  // Unimplemented.
  virtual absl::Status AppendEvents(absl::Span<const LoggedEvent> events) {
    (void)events;
    return NoEventLog();
  }

  // JobEvents()
  //
  // The newest `limit` events of job `id` still in the log, oldest first;
  // empty for an id it holds none of (not an error).
  virtual absl::StatusOr<std::vector<LoggedEvent>> JobEvents(
      absl::string_view id, int limit) {
    (void)id, (void)limit;
    return NoEventLog();
  }

  // OpenBatch()
  //
  // Batches. Stores `completion` as the completion job of a new open batch
  // whose id is completion.id: kWaiting, enqueued_at = `now`, with no
  // dependencies (the caller gives none, nor a batch). AlreadyExists when
  // the id is taken, as for Add(). Jobs join the batch by Add() with
  // NewJob::batch while it is open. Each job of the batch is counted once,
  // in the same atomic step as the transition that first finishes it: Ack()
  // (done, kept or deleted), going dead (Fail(), an expired last lease, a
  // lapse, a dependency's failure), or leaving unacknowledged (Cancel(),
  // PurgeDead(), a discarded lapse, a dependency's departure: cancelled).
  // Once the batch is closed and none of its jobs is pending, the step that
  // made it so (the last finish, or CloseBatch()) releases the completion
  // job as a dependency's last Ack() releases a waiting job: ready at once,
  // or delayed when its run_at is after `now`; announced as such. So it is
  // released exactly once, whichever processes finish the jobs. The batch
  // stays readable (GetBatch()) while its completion job is in the store;
  // Cancel() of a waiting completion job drops the batch (its jobs stay
  // and run, counted by no one). A job's membership ends with its batch:
  // once the batch has left the store, however it left, none of its jobs
  // counts in any batch, not even in a later batch opened under the same
  // id, which counts only the jobs that joined it. The default, for a
  // store that cannot keep batches, is Unimplemented naming the store.
  virtual absl::Status OpenBatch(const NewJob& completion, absl::Time now) {
    (void)completion, (void)now;
    return internal::NoBatches(Name());
  }

  // CloseBatch()
  //
  // Closes batch `id`: Add() refuses jobs for it from now on. Releases its
  // completion job in this same step when none of its jobs is pending (an
  // empty batch included). Closing a closed batch changes nothing and
  // succeeds. NotFound when no batch has the id. `settled` as for Ack()
  // (the completion job, when this call released it).
  virtual absl::Status CloseBatch(absl::string_view id, absl::Time now,
                                  std::vector<Settled>* settled) {
    (void)id, (void)now, (void)settled;
    return internal::NoBatches(Name());
  }

  // CloseBatch() that reports no settled jobs.
  absl::Status CloseBatch(absl::string_view id, absl::Time now) {
    return CloseBatch(id, now, nullptr);
  }

  // GetBatch()
  //
  // Batch `id`'s progress. NotFound when no batch has the id (also once its
  // completion job has left the store).
  virtual absl::StatusOr<Batch> GetBatch(absl::string_view id) {
    (void)id;
    return internal::NoBatches(Name());
  }

  // Subscribe()
  //
  // Starts delivering StoreNews to `on_news` until the returned subscription
  // is destroyed. A store shared by several processes announces the changes
  // that every process makes, this one included:
  //   * kReady(topic) whenever a call leaves a topic's ready set non-empty
  //     that was empty before it;
  //   * kDue(at) whenever a call stores a run_at or a lease deadline `at`
  //     that is earlier than the store's NextDue() as last read or
  //     announced (a store may announce more often than that, never less);
  //   * kSchedules whenever a call stores or removes a schedule.
  // News follows the change it tells of: a subscriber that hears it and then
  // reads the store sees the change. Delivery is best effort: a subscription
  // that may have missed news (its connection dropped) delivers kResync once
  // it is back, and callers keep a rare periodic look at the store as a
  // safety net.
  //
  // Returns nullptr when the store has no news to give: a store private to
  // one Backend object (memory), where the caller sees every change itself.
  // This default is what a store without the feature inherits.
  virtual absl::StatusOr<std::unique_ptr<NewsSubscription>> Subscribe(
      NewsCallback on_news) {
    (void)on_news;
    return std::unique_ptr<NewsSubscription>();
  }

 private:
  absl::Status NoSchedules() const {
    return absl::UnimplementedError(
        absl::StrCat(Name(), ": this store cannot keep schedules"));
  }
  absl::Status NoEventLog() const {
    return absl::UnimplementedError(
        absl::StrCat(Name(), ": this store keeps no event log"));
  }
  absl::Status NoCounts() const {
    return absl::UnimplementedError(
        absl::StrCat(Name(), ": this store keeps no counts"));
  }
};

// BackendWrapper
//
// Forwards every call to a target backend. Override some methods to inject
// faults or observe calls in tests. Does not own the target.
//
// All but one: AckAndReserve() keeps Backend's default, Ack() then
// Reserve() through this wrapper, so a wrapper that overrides either of
// them sees the calls that a worker makes through it. A wrapper that
// neither changes nor refuses calls forwards it to the target itself, to
// keep the target's one round trip.
class BackendWrapper : public Backend {
 public:
  explicit BackendWrapper(Backend* target) : target_(target) {}

  Backend* target() const { return target_; }

  std::string Name() const override { return target_->Name(); }
  absl::Status Add(absl::Span<const NewJob> jobs, absl::Time now) override {
    return target_->Add(jobs, now);
  }
  absl::Status CheckAddInOneStep(absl::Span<const NewJob> jobs) const override {
    return target_->CheckAddInOneStep(jobs);
  }
  bool PlacesIdsByHashTag() const override {
    return target_->PlacesIdsByHashTag();
  }
  using Backend::Reserve;
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Time now,
                                             ReserveReport* report) override {
    return target_->Reserve(topic, max, now, report);
  }
  using Backend::Ack;
  absl::Status Ack(absl::string_view id, uint64_t token,
                   absl::string_view result, absl::Time now,
                   std::vector<Settled>* settled) override {
    return target_->Ack(id, token, result, now, settled);
  }
  using Backend::AckBatch;
  absl::StatusOr<std::vector<absl::Status>> AckBatch(
      absl::Span<const Lease> leases, absl::Time now,
      std::vector<Settled>* settled) override {
    return target_->AckBatch(leases, now, settled);
  }
  using Backend::Fail;
  absl::StatusOr<FailOutcome> Fail(absl::string_view id, uint64_t token,
                                   absl::string_view error, absl::Time retry_at,
                                   absl::Time now,
                                   std::vector<Settled>* settled) override {
    return target_->Fail(id, token, error, retry_at, now, settled);
  }
  absl::Status Release(absl::string_view id, uint64_t token, absl::Time run_at,
                       absl::Time now) override {
    return target_->Release(id, token, run_at, now);
  }
  absl::StatusOr<absl::Time> Touch(absl::string_view id, uint64_t token,
                                   absl::Time now) override {
    return target_->Touch(id, token, now);
  }
  using Backend::Cancel;
  absl::Status Cancel(absl::string_view id, absl::Time now,
                      std::vector<Settled>* settled) override {
    return target_->Cancel(id, now, settled);
  }
  absl::StatusOr<Job> Get(absl::string_view id) override {
    return target_->Get(id);
  }
  absl::StatusOr<std::vector<Job>> List(absl::string_view topic, JobState state,
                                        int limit) override {
    return target_->List(topic, state, limit);
  }
  absl::StatusOr<JobPage> ListPage(absl::string_view topic, JobState state,
                                   int limit,
                                   absl::string_view cursor) override {
    return target_->ListPage(topic, state, limit, cursor);
  }
  absl::StatusOr<TopicStats> Stats(absl::string_view topic) override {
    return target_->Stats(topic);
  }
  absl::StatusOr<std::vector<std::string>> Topics() override {
    return target_->Topics();
  }
  absl::StatusOr<int> Kick(absl::string_view topic, int max,
                           absl::Time now) override {
    return target_->Kick(topic, max, now);
  }
  absl::Status KickJob(absl::string_view id, absl::Time now) override {
    return target_->KickJob(id, now);
  }
  absl::StatusOr<std::vector<std::string>> KickIds(absl::string_view topic,
                                                   int max,
                                                   absl::Time now) override {
    return target_->KickIds(topic, max, now);
  }
  absl::StatusOr<PromoteResult> PromoteDue(absl::Time now, int limit) override {
    return target_->PromoteDue(now, limit);
  }
  absl::Status PromoteJob(absl::string_view id, absl::Time now) override {
    return target_->PromoteJob(id, now);
  }
  using Backend::PurgeDead;
  absl::StatusOr<int> PurgeDead(absl::string_view topic, int max,
                                absl::Time now,
                                std::vector<Settled>* settled) override {
    return target_->PurgeDead(topic, max, now, settled);
  }
  absl::StatusOr<absl::Time> NextDue() override { return target_->NextDue(); }
  absl::Status SetPaused(absl::string_view topic, bool paused,
                         absl::Time now) override {
    return target_->SetPaused(topic, paused, now);
  }
  absl::Status Replace(const NewJob& job, absl::Time now) override {
    return target_->Replace(job, now);
  }
  absl::StatusOr<std::vector<std::string>> PausedTopics() override {
    return target_->PausedTopics();
  }
  absl::Status SetLimit(absl::string_view topic, const TopicLimit& limit,
                        absl::Time now) override {
    return target_->SetLimit(topic, limit, now);
  }
  absl::Status ClearLimit(absl::string_view topic, absl::Time now) override {
    return target_->ClearLimit(topic, now);
  }
  absl::StatusOr<std::vector<LimitedTopic>> Limits() override {
    return target_->Limits();
  }
  absl::Status PutSchedule(const ScheduleRecord& schedule,
                           absl::Time now) override {
    return target_->PutSchedule(schedule, now);
  }
  absl::Status RemoveSchedule(absl::string_view name, absl::Time now) override {
    return target_->RemoveSchedule(name, now);
  }
  absl::StatusOr<std::vector<ScheduleRecord>> ListSchedules() override {
    return target_->ListSchedules();
  }
  absl::Status FireSchedule(absl::string_view name, int64_t revision,
                            absl::Time through, absl::Span<const NewJob> jobs,
                            absl::Time now) override {
    return target_->FireSchedule(name, revision, through, jobs, now);
  }
  absl::StatusOr<std::vector<TopicMinute>> Counts(absl::Time from,
                                                  absl::Time to) override {
    return target_->Counts(from, to);
  }
  absl::StatusOr<std::vector<TopicTotals>> CountTotals() override {
    return target_->CountTotals();
  }
  absl::Status AppendEvents(absl::Span<const LoggedEvent> events) override {
    return target_->AppendEvents(events);
  }
  absl::StatusOr<std::vector<LoggedEvent>> JobEvents(absl::string_view id,
                                                     int limit) override {
    return target_->JobEvents(id, limit);
  }
  absl::Status OpenBatch(const NewJob& completion, absl::Time now) override {
    return target_->OpenBatch(completion, now);
  }
  using Backend::CloseBatch;
  absl::Status CloseBatch(absl::string_view id, absl::Time now,
                          std::vector<Settled>* settled) override {
    return target_->CloseBatch(id, now, settled);
  }
  absl::StatusOr<Batch> GetBatch(absl::string_view id) override {
    return target_->GetBatch(id);
  }
  absl::StatusOr<std::unique_ptr<NewsSubscription>> Subscribe(
      NewsCallback on_news) override {
    return target_->Subscribe(std::move(on_news));
  }

 private:
  Backend* target_;
};

}  // namespace delayq

#endif  // DELAYQ_BACKEND_H_
