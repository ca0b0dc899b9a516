// Copyright delayq authors.
//
// scheduler.h — the delayq API: enqueue jobs to run later, reserve and finish
// them, or register handlers and let worker threads run them.
//
// A Scheduler sits in front of one Backend (the store). It validates input,
// writes through the store, and keeps a hierarchical timing wheel of the
// store's upcoming deadlines (delayed jobs, lease deadlines, retry backoffs)
// so that due jobs are promoted on time without polling the store in a loop.
// The wheel is only a cache of the store, which other processes share: a
// store that announces their changes (SQLite, Redis) wakes the scheduler
// within a millisecond or two when something becomes ready or due sooner
// than it knew, and every `poll_interval` (`news_poll_interval` for a store
// with news) the scheduler asks the store for its next due time anyway, so
// lost news or a process that died loses nothing.
//
// Two ways to drive it:
//   * A host loop (a game server) calls Tick() from its own loop and
//     Reserve() with no wait; no threads are started.
//   * Start() runs a timer thread and worker threads for the handlers
//     registered with Handle(); Stop() ends them.
//
//   auto scheduler = delayq::Scheduler::Create(
//       *delayq::OpenBackend("sqlite:jobs.db")).value();
//   delayq::JobOptions in_30_minutes;
//   in_30_minutes.delay = absl::Minutes(30);
//   scheduler->Enqueue("orders.expire", order_id, in_30_minutes);
//   scheduler->Handle("orders.expire", [](const delayq::Job& job) {
//     return CancelUnpaidOrder(job.payload);   // OK acks; an error retries
//   });
//   scheduler->Start();
//
// Guarantees: at-least-once (a job leaves the store only by Ack or Cancel);
// fencing (a lease whose job was reserved again, finished, released or
// cancelled is refused with FailedPrecondition and changes nothing); ordering
// among ready jobs of a topic by priority, then due time, then enqueue order.
//
// Thread-safety: every method may be called from any thread at any time,
// except that Create() must return before any other call and the Scheduler
// must outlive every call made on it.

#ifndef DELAYQ_SCHEDULER_H_
#define DELAYQ_SCHEDULER_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "delayq/backend.h"
#include "delayq/batch.h"
#include "delayq/clock.h"
#include "delayq/event.h"
#include "delayq/job.h"
#include "delayq/schedule.h"

namespace delayq {

// SchedulerOptions
struct SchedulerOptions {
  // Where time comes from. nullptr means RealClock(). Not owned; must outlive
  // the scheduler.
  Clock* clock = nullptr;
  // The timing wheel's resolution. Deadlines are rounded up to a tick, so a
  // job is never promoted early and at most one tick late.
  absl::Duration tick = absl::Milliseconds(1);
  // How often the timer thread asks a store that sends no news (see
  // Backend::Subscribe()) for its next due time, to see jobs other processes
  // added. Also the longest a blocked Reserve() sleeps between looks at such
  // a store.
  absl::Duration poll_interval = absl::Seconds(1);
  // The same for a store that announces other processes' changes (SQLite,
  // Redis): the scheduler wakes on the store's news, and looks at the store
  // on its own only this often, as a safety net against lost news. (A store
  // whose news cannot be had, such as a SQLite file in a folder this process
  // may not write to, is looked at every poll_interval instead.)
  absl::Duration news_poll_interval = absl::Seconds(30);
  // Payloads larger than this are refused with InvalidArgument.
  size_t max_payload_bytes = 1 << 20;
  // Results (Ack(lease, result)) larger than this are refused with
  // InvalidArgument.
  size_t max_result_bytes = 64 << 10;
  // Most jobs one PromoteDue() call of the store moves; promotion loops until
  // nothing due is left, so this only bounds how long one store call takes.
  int promote_batch = 1000;
  // Told of each store error that the scheduler's own threads meet, which
  // no caller is there to hear: a worker's reserve, ack, fail or release
  // ("reserve", "ack", "fail", "release"), a lease's renewal ("touch"), the
  // timer's promotion ("promote") and a schedule's firing ("schedule").
  // Each is retried as before (a job whose lease could not be ended comes
  // back after its ttr); this only tells. Runs on the thread that met the
  // error, with no lock of the scheduler held; keep it short. Null: none.
  std::function<void(absl::string_view what, const absl::Status& error)>
      on_background_error;
  // Writes this scheduler's events to the store's event log (event_log.h),
  // where every process reads them (the history of a job, whoever worked
  // it). Written in batches after the transitions, by a thread of its own
  // while Start()'s threads run, else by Tick() and every 256 events, and
  // when the scheduler stops; a store that keeps no log is not written to.
  // The events of a batch the store refuses are dropped and reported to
  // on_background_error as "events".
  bool event_log = true;
  // The process's name in the event log (LoggedEvent::who); empty means
  // "<host name>:<pid>".
  std::string name;
  // No longer used. The scheduler keeps no timer per job: one timer at the
  // earliest time it knows of stands for them all; when it fires, the
  // scheduler promotes and asks the store for its next due time, so no job is
  // late and the scheduler's memory does not grow with the pending jobs.
  size_t max_job_timers = 100'000;
};

// HandlerOptions
struct HandlerOptions {
  // Worker threads for this topic.
  int concurrency = 1;
  // Most leases one worker reserves in one store call.
  int batch = 1;
  // While a handler runs, its lease is touched whenever less than this
  // fraction of the job's ttr remains. Kept within [0.05, 0.95].
  double renew_fraction = 0.5;
};

// Handler
//
// Runs one job. OK acknowledges it; any other status (or a thrown exception)
// fails it with the message as its error.
using Handler = std::function<absl::Status(const Job&)>;

// LeaseHandler
//
// A Handler that sees its whole lease: the job, its fencing token and the
// deadline the lease had when the handler started (workers extend it while
// the handler runs; the token stays). A handler that writes elsewhere can
// send the token along, so that the other side refuses a write from a
// handler whose lease has since passed to another worker (a newer token).
using LeaseHandler = std::function<absl::Status(const Lease&)>;

// ResultHandler
//
// A Handler that returns a result: a value acknowledges the job with it as
// the job's result (kept when the job has a keep_for, see
// JobOptions::keep_for); an error fails the job as for Handler.
using ResultHandler = std::function<absl::StatusOr<std::string>(const Job&)>;

// Scheduler
class Scheduler {
 public:
  // Create()
  //
  // A scheduler over `backend`. Asks the store for its next due time, so a
  // restarted process picks up where the store left off. InvalidArgument for
  // a null backend or options out of range (tick <= 0, poll_interval or
  // news_poll_interval <= 0, promote_batch < 1); a store error if the store
  // cannot be read.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(
      std::unique_ptr<Backend> backend, SchedulerOptions options = {});

  // Stops worker threads (as Stop(absl::ZeroDuration())) and closes the store.
  ~Scheduler();

  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Enqueue()
  //
  // Stores a job for `topic` and returns its id. InvalidArgument for a topic
  // that is empty, longer than 200 bytes or has characters outside
  // [A-Za-z0-9._:-]; an id longer than 200 bytes; a negative delay; ttr <= 0;
  // max_attempts < 1; a payload over max_payload_bytes. AlreadyExists when
  // the id names a live job. Store errors as the store returns them.
  absl::StatusOr<std::string> Enqueue(absl::string_view topic,
                                      absl::string_view payload,
                                      const JobOptions& options = {});

  // EnqueueBatch()
  //
  // Enqueues every payload with the same options in one store call, all or
  // nothing, and returns the ids in order. With a non-empty options.id the
  // ids are options.id + "-" + index. Errors as Enqueue().
  absl::StatusOr<std::vector<std::string>> EnqueueBatch(
      absl::string_view topic, absl::Span<const std::string> payloads,
      const JobOptions& options = {});

  // FlowJob
  //
  // One job of a flow (EnqueueFlow()): its topic, payload and options, the
  // id among them (generated when empty, which no other job of the flow
  // can then name).
  struct FlowJob {
    std::string topic;
    std::string payload;
    JobOptions options;
  };

  // EnqueueFlow()
  //
  // Enqueues jobs of any topics, each with its own options, in one store
  // call, all or nothing (a tree, a chain, a fan-out and its fan-in), and
  // returns their ids in the order given. A job's options.after may name
  // jobs of the flow, in any order (a parent may come before its
  // children), and jobs the store holds; the store sees every job after
  // the ones it waits for. InvalidArgument for an empty flow, a job that
  // Enqueue() would refuse, options.replace, or jobs that wait for each
  // other in a cycle; AlreadyExists for an id two jobs share or a live one;
  // NotFound for an `after` id that is neither in the flow nor in the
  // store. A store that cannot hold dependencies refuses a flow that has
  // any, as Enqueue() does.
  //
  // All or nothing holds on every store: one that would write the flow in
  // parts refuses it with InvalidArgument before it writes anything
  // (Backend::CheckAddInOneStep()). That is a sharded Redis namespace whose
  // ids fall on several shards: give the flow's ids one hash tag
  // ('{order-17}:render', '{order-17}:publish'). On such a store
  // (Backend::PlacesIdsByHashTag()) the ids made for jobs without one carry
  // the flow's tag, "{tag}:<generated id>": the first hash tag of the
  // flow's own ids, else of the ids its jobs wait for or the batches they
  // join, else one made for the flow; so a flow of made ids, or of made ids
  // and ids of one tag, lies on one shard. On other stores made ids are
  // the generated ids Enqueue() makes.
  absl::StatusOr<std::vector<std::string>> EnqueueFlow(
      absl::Span<const FlowJob> jobs);

  // Reserve()
  //
  // Leases the next due job of `topic`: the ready job of lowest priority,
  // then earliest due time, then earliest enqueue; a delayed job whose time
  // has come counts, whether or not Tick() has run. When none is due, waits
  // up to `wait` (on the scheduler's clock) for one to be enqueued or become
  // due, then returns std::nullopt. InvalidArgument for a bad topic.
  absl::StatusOr<std::optional<Lease>> Reserve(
      absl::string_view topic, absl::Duration wait = absl::ZeroDuration());

  // ReserveBatch()
  //
  // As Reserve(), for up to `max` jobs in one store call. Returns as soon as
  // at least one job was reserved, or empty after `wait`.
  absl::StatusOr<std::vector<Lease>> ReserveBatch(
      absl::string_view topic, int max,
      absl::Duration wait = absl::ZeroDuration());

  // ReserveBatch() that a server can cut short: it also returns (empty,
  // OK) once `stop` is set and WakeReserves() was called after setting it,
  // so that a process shutting down need not wait out long waits.
  absl::StatusOr<std::vector<Lease>> ReserveBatch(
      absl::string_view topic, int max, absl::Duration wait,
      const std::atomic<bool>& stop);

  // ReserveBatchFor()
  //
  // ReserveBatch() on behalf of a worker that is not this process (a
  // server's client): the leases are stored as held by `holder`
  // (Job::holder) instead of by SchedulerOptions::name; "" keeps that name.
  // The caller bounds and checks `holder`.
  absl::StatusOr<std::vector<Lease>> ReserveBatchFor(
      absl::string_view holder, absl::string_view topic, int max,
      absl::Duration wait, const std::atomic<bool>& stop);

  // WakeReserves()
  //
  // Makes every Reserve() and ReserveBatch() waiting in this process look at
  // the store again now; one whose `stop` is set returns.
  void WakeReserves();

  // CheckTopic(), CheckJobId()
  //
  // The checks the calls make of a topic and of a job's id, for code that
  // reads its input before it acts on any of it (a request that acks, then
  // reserves): OK, or InvalidArgument naming the problem, as the calls give
  // it. An id of "" passes (Enqueue() generates one).
  static absl::Status CheckTopic(absl::string_view topic);
  static absl::Status CheckJobId(absl::string_view id);

  // Ack()
  //
  // The job is done: deletes it, or keeps it done with `result` when it has
  // a keep_for (JobOptions::keep_for). FailedPrecondition if the lease is
  // stale; InvalidArgument for a result over max_result_bytes.
  absl::Status Ack(const Lease& lease, absl::string_view result = "");

  // AckAndReserve()
  //
  // Ack(lease, result), then Reserve(topic, wait): the loop of a consumer
  // that goes straight on to its next job, in one store call where the
  // store can (one round trip per job on Redis). `acked` is the ack's
  // outcome as Ack() gives it; `next` the reservation's, as Reserve() gives
  // it. A refused ack (FailedPrecondition: a stale lease) changes nothing
  // and the reservation still goes ahead. When the store could not be
  // asked, both carry its error and neither part is known to have happened
  // (a reservation whose reply was lost comes back after its ttr).
  //
  //   std::optional<Lease> lease = scheduler->Reserve(topic, wait).value();
  //   while (lease) {
  //     Handle(lease->job);
  //     AckedAndNext step = scheduler->AckAndReserve(*lease, topic, wait);
  //     if (!step.acked.ok()) Log(step.acked);
  //     lease = step.next.ok() ? *step.next : std::nullopt;
  //   }
  struct AckedAndNext {
    absl::Status acked;
    absl::StatusOr<std::optional<Lease>> next;
  };
  AckedAndNext AckAndReserve(const Lease& lease, absl::string_view topic,
                             absl::Duration wait = absl::ZeroDuration(),
                             absl::string_view result = "");

  // AckAndReserveFor()
  //
  // AckAndReserve() on behalf of a worker that is not this process, as
  // ReserveBatchFor(): the next lease is held by `holder` ("" keeps
  // SchedulerOptions::name).
  AckedAndNext AckAndReserveFor(absl::string_view holder, const Lease& lease,
                                absl::string_view topic,
                                absl::Duration wait = absl::ZeroDuration(),
                                absl::string_view result = "");

  // AckBatch()
  //
  // Ack() of every lease, in one store transaction or round trip where the
  // store can (Backend::AckBatch()): one status per lease, in order: OK,
  // FailedPrecondition for a stale one (the others still go), or the error
  // of the part of the store that could not be asked. The outer status
  // fails when the store as a whole could not be asked.
  absl::StatusOr<std::vector<absl::Status>> AckBatch(
      absl::Span<const Lease> leases);

  // Fail()
  //
  // The attempt failed with `error`. With attempts left the job runs again
  // after its backoff; otherwise it goes dead with `error` kept. An error is
  // kept (and told to listeners) up to its first 8 KiB.
  // FailedPrecondition if the lease is stale.
  absl::Status Fail(const Lease& lease, absl::string_view error);

  // Release()
  //
  // Puts the job back without counting the attempt, due after `delay`.
  // InvalidArgument for a negative delay; FailedPrecondition if stale.
  absl::Status Release(const Lease& lease, absl::Duration delay);

  // Touch()
  //
  // Extends the lease to now + ttr and updates lease.deadline.
  // FailedPrecondition if the lease is stale.
  absl::Status Touch(Lease& lease);

  // Cancel()
  //
  // Deletes the job in whatever state it is. NotFound for an unknown id.
  absl::Status Cancel(absl::string_view id);

  // CancelFlow()
  //
  // Cancels job `id` and every job it waits for, directly or through others
  // (Job::after), that is still to run: a flow, from its last job down.
  // Returns the ids cancelled, `id` first. Jobs that finished (done, dead)
  // stay, and so do the jobs only they lead to. Each job is cancelled as
  // Cancel() does, parents before what they wait for, so that none of them
  // is failed by a dependency this call cancels; a job that others outside
  // the flow also wait for is cancelled too, and they apply their
  // on_dependency_failure. NotFound when `id` names no job;
  // FailedPrecondition when it has finished. Not one step: a store error
  // midway is returned and leaves the rest, which a second call cancels.
  absl::StatusOr<std::vector<std::string>> CancelFlow(absl::string_view id);

  // Get()
  //
  // A snapshot of the job. NotFound for an unknown id.
  absl::StatusOr<Job> Get(absl::string_view id);

  // OpenBatch()
  //
  // Opens a batch (delayq/batch.h) and stores its completion job, `payload`
  // for `topic` with `options`, waiting. Returns the batch's id, which is
  // the completion job's: options.id, or a generated one. Jobs join the
  // batch with JobOptions::batch until CloseBatch(); the completion job is
  // released once the batch is closed and every job of it has finished. Its
  // run_at is resolved now: a delay counts from this call, and one that has
  // passed by the release makes the job ready at once. Errors as Enqueue();
  // InvalidArgument for options with after, batch or replace; Unimplemented
  // on a store that cannot keep batches.
  absl::StatusOr<std::string> OpenBatch(absl::string_view topic,
                                        absl::string_view payload,
                                        const JobOptions& options = {});

  // CloseBatch()
  //
  // Closes the batch: it takes no more jobs, and its completion job is
  // released at once when none of its jobs is pending. Closing it again
  // succeeds and changes nothing. NotFound for an unknown batch.
  absl::Status CloseBatch(absl::string_view id);

  // GetBatch()
  //
  // The batch's progress: its counts, whether it is closed, its completion
  // job's id. NotFound for an unknown batch, and once its completion job
  // has left the store. A completion job's handler reads the final counts
  // with GetBatch(job.id).
  absl::StatusOr<Batch> GetBatch(absl::string_view id);

  // WaitForResult()
  //
  // Waits until the job has finished and returns it: done (with its result;
  // only a job with a keep_for is kept done) or dead (with its last error).
  // NotFound when the id names no job, or the job left the store without
  // being kept (acknowledged without keep_for, cancelled, discarded);
  // DeadlineExceeded when it has not finished within `timeout`. Looks at
  // the store when this process acknowledges or fails a job, and otherwise
  // every `poll` (the job may be worked by another process).
  absl::StatusOr<Job> WaitForResult(
      absl::string_view id, absl::Duration timeout,
      absl::Duration poll = absl::Milliseconds(50));

  // List()
  //
  // Up to `limit` jobs of `topic` in `state` (see Backend::List()).
  absl::StatusOr<std::vector<Job>> List(absl::string_view topic, JobState state,
                                        int limit = 100);

  // ListPage()
  //
  // One page of `topic`'s jobs in `state`, after `cursor` ("" for the first
  // page), with the next page's cursor (see Backend::ListPage(), which says
  // what paging on while jobs move guarantees). InvalidArgument for a bad
  // topic, a limit below 1 or a cursor that the list did not give.
  absl::StatusOr<JobPage> ListPage(absl::string_view topic, JobState state,
                                   int limit = 100,
                                   absl::string_view cursor = "");

  // ListLeases()
  //
  // One page of the live leases of every topic (reserved jobs with their
  // Job::holder and Job::reserved_at), topic by topic in topic order, after
  // `cursor` ("" for the first page), with the next page's cursor. A lease
  // that stays live while the pages are read is seen once. InvalidArgument
  // for a limit below 1 or a cursor that no page of leases gave.
  absl::StatusOr<JobPage> ListLeases(int limit = 100,
                                     absl::string_view cursor = "");

  // Stats()
  //
  // Counts per state for `topic`. InvalidArgument for a bad topic.
  absl::StatusOr<TopicStats> Stats(absl::string_view topic);

  // Topics()
  //
  // Every topic with at least one live job, sorted.
  absl::StatusOr<std::vector<std::string>> Topics();

  // Counts() / CountTotals()
  //
  // What the store counted (see counts.h and Backend::Counts()): every
  // topic's counts per minute from `from` to `to`, and every topic's totals.
  // The same from every process that shares the store. InvalidArgument when
  // `from` is after `to`; Unimplemented for a store that keeps no counts.
  absl::StatusOr<std::vector<TopicMinute>> Counts(absl::Time from,
                                                  absl::Time to);
  absl::StatusOr<std::vector<TopicTotals>> CountTotals();

  // RecentCounts()
  //
  // Counts() of the last `span` (to now, by the scheduler's clock), summed
  // per topic: the topics counted in that time, sorted.
  absl::StatusOr<std::vector<TopicTotals>> RecentCounts(absl::Duration span);

  // Kick()
  //
  // Moves up to `max` dead jobs of `topic` back to ready (attempts reset) and
  // returns how many moved. InvalidArgument for a bad topic or max < 0.
  absl::StatusOr<int> Kick(absl::string_view topic, int max);

  // KickJob()
  //
  // Moves one dead job back to ready. NotFound for an unknown id,
  // FailedPrecondition if it is not dead.
  absl::Status KickJob(absl::string_view id);

  // Promote()
  //
  // Runs a delayed job now (one waiting for its time or for its retry):
  // ready at once, its attempts kept. Emits kPromoted. NotFound for an
  // unknown id, FailedPrecondition if it is not delayed; Unimplemented for
  // a store that cannot (see Backend::PromoteJob()).
  absl::Status Promote(absl::string_view id);

  // PurgeDead()
  //
  // Deletes up to `max` dead jobs of `topic` (oldest death first) and
  // returns how many went. InvalidArgument for a bad topic or max < 0.
  absl::StatusOr<int> PurgeDead(absl::string_view topic,
                                int max = std::numeric_limits<int>::max());

  // Pause() / Resume()
  //
  // Stops (or restarts) delivery of `topic` to every process that shares
  // the store: while it is paused, Reserve() and Handle() workers get none
  // of its jobs, which still become due and wait as ready. Kept in the
  // store, so it survives restarts. InvalidArgument for a bad topic;
  // Unimplemented for a store that cannot pause (see Backend::SetPaused()).
  absl::Status Pause(absl::string_view topic);
  absl::Status Resume(absl::string_view topic);

  // PausedTopics()
  //
  // Every paused topic, sorted.
  absl::StatusOr<std::vector<std::string>> PausedTopics();

  // SetLimit() / ClearLimit()
  //
  // Limits how fast, and how many at once, every process that shares the
  // store reserves `topic`'s jobs (see TopicLimit), or removes the limit.
  // Kept in the store and checked inside each reservation. A Reserve() with
  // a wait, and a Handle() worker, that the limit holds back sleeps until
  // the time the limit gives (for a full concurrency cap: until one of the
  // topic's reservations ends), not for a polling interval. Setting a
  // limit again replaces it. InvalidArgument for a bad topic or a limit
  // with rate and concurrency both 0, a negative one, burst < 1 or a
  // period outside (0, ten years]; Unimplemented for a store that cannot
  // limit topics.
  absl::Status SetLimit(absl::string_view topic, const TopicLimit& limit);
  absl::Status ClearLimit(absl::string_view topic);

  // Limits()
  //
  // Every limited topic with its limit, sorted by topic.
  absl::StatusOr<std::vector<LimitedTopic>> Limits();
  // Schedule()
  //
  // Stores a periodic schedule named `name` (1..150 bytes of
  // [A-Za-z0-9._:-]) in the store, for every process that shares it: each
  // occurrence of `spec` (see delayq/schedule.h) becomes one job of `topic`
  // with `payload` and options.job's settings, whose id is the name and the
  // occurrence ("nightly@2026-03-29T01:00:00Z"). However many processes run
  // the schedule, each occurrence is enqueued once: the store takes the
  // first process's occurrence and refuses the others'. A scheduler runs
  // the schedules from its timer thread or Tick(), like delayed jobs, and
  // hears of schedules other processes store. Storing a name again replaces
  // the schedule; a new spec or time zone takes effect from its next
  // occurrence, while the same spec keeps its place, so every process may
  // call Schedule() at its start without losing occurrences missed while
  // none ran (options.missed says which of those run). InvalidArgument for
  // a bad name, spec, time zone, topic, payload or option, or a spec that
  // never occurs; Unimplemented for a store that keeps no schedules.
  absl::Status Schedule(absl::string_view name, absl::string_view spec,
                        absl::string_view topic, absl::string_view payload,
                        const ScheduleOptions& options = {});

  // Unschedule()
  //
  // Deletes the schedule; jobs it already enqueued stay. NotFound when no
  // schedule has the name.
  absl::Status Unschedule(absl::string_view name);

  // Schedules()
  //
  // Every schedule in the store, sorted by name, with its next run (in the
  // past while an occurrence is due and not yet enqueued).
  absl::StatusOr<std::vector<ScheduleInfo>> Schedules();

  // FlushEventLog()
  //
  // Writes the events this scheduler has not yet written to the store's
  // event log (SchedulerOptions::event_log), on the calling thread: a
  // reader of the log that asks after it sees every transition this
  // scheduler made before the call. The error of a refused write is also
  // reported to on_background_error; OK when the log is off.
  absl::Status FlushEventLog();

  // Tick()
  //
  // Promotes everything due at the clock's now: fires the wheel's expired
  // timers and asks the store to promote until nothing due is left. Returns
  // how many jobs moved. For a host loop that runs no threads, and for tests.
  absl::StatusOr<int> Tick();

  // Handle()
  //
  // Registers `handler` for `topic`; Start() runs its workers (at once, when
  // already started). Registering a topic again replaces the handler (takes
  // effect for jobs reserved after). A bad topic is not registered and makes
  // the next Start() return InvalidArgument.
  void Handle(absl::string_view topic, Handler handler,
              HandlerOptions options = {});

  // HandleLeases()
  //
  // Handle() for a handler that sees its lease (see LeaseHandler).
  void HandleLeases(absl::string_view topic, LeaseHandler handler,
                    HandlerOptions options = {});

  // HandleResults()
  //
  // Handle() for a handler that returns the job's result (see
  // ResultHandler).
  void HandleResults(absl::string_view topic, ResultHandler handler,
                     HandlerOptions options = {});

  // Start()
  //
  // Starts the timer thread and the workers of every handler. Worker threads
  // reserve jobs, run the handler, and ack or fail; a lease is extended while
  // its handler runs. FailedPrecondition if already started; InvalidArgument
  // if Handle() was given a bad topic.
  absl::Status Start();

  // Stop()
  //
  // Stops reserving, waits up to `grace` for running handlers, and joins all
  // threads. A handler still running after `grace` is waited for all the
  // same (a thread cannot be killed safely), but its lease is no longer
  // extended, so another worker may get the job after its ttr. Idempotent;
  // a second concurrent Stop() returns when the threads are gone. Called
  // from a handler or listener running on one of the scheduler's own
  // threads, it only asks the threads to stop and returns at once (a thread
  // cannot join itself); the next Stop() from another thread, or the
  // destructor, joins them.
  void Stop(absl::Duration grace = absl::Seconds(30));

  // AddListener()
  //
  // Registers `listener` for every event and returns a handle for
  // RemoveListener().
  int AddListener(EventListener listener);
  // The same for a listener told each call's events together.
  int AddBatchListener(EventBatchListener listener);

  // RemoveListener()
  //
  // Unregisters a listener. When it returns, the listener is not running and
  // will not be called again.
  void RemoveListener(int handle);

  // clock(), backend()
  Clock& clock() const;
  Backend& backend() const;

 private:
  class Impl;
  explicit Scheduler(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace delayq

#endif  // DELAYQ_SCHEDULER_H_
