// Copyright delayq authors.
//
// backend_impl.h — the SQLite Backend class, shared by the file of its
// writes (sqlite_backend.cc) and the file of its reads (reads.cc).

#ifndef DELAYQ_BACKENDS_SQLITE_INTERNAL_BACKEND_IMPL_H_
#define DELAYQ_BACKENDS_SQLITE_INTERNAL_BACKEND_IMPL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "backends/sqlite/internal/checkpointer.h"
#include "backends/sqlite/internal/db.h"
#include "backends/sqlite/internal/group_commit.h"
#include "backends/sqlite/internal/news.h"
#include "delayq/backend.h"
#include "delayq/sqlite_backend.h"
#include "src/common/mutex.h"
#include "src/common/stored_state.h"

namespace delayq {
namespace sqlite_internal {

// Job states as stored, and back (src/common/stored_state.h).
using internal::StateFromInt;
using internal::StateToInt;

// Decodes a row of DQ_JOB_COLUMNS. Sets *token when not null.
Job ReadJob(const Statement& s, uint64_t* token = nullptr);

// Decodes a row of DQ_SCHEDULE_COLUMNS.
ScheduleRecord ReadSchedule(const Statement& s);

// SqliteBackend
//
// The Backend over one SQLite connection. A read takes mu_ and runs one
// statement. A write is one operation in a write transaction that the
// writes of other threads arriving at the same moment share (group_commit.h):
// it sees the effects of the operations before it, and its failure undoes
// only its own.
class SqliteBackend : public Backend {
 public:
  static absl::StatusOr<std::unique_ptr<Backend>> Open(
      const SqliteOptions& options);

  std::string Name() const override { return "sqlite"; }
  absl::Status Add(absl::Span<const NewJob> jobs, absl::Time now) override;
  using Backend::Reserve;
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Time now,
                                             ReserveReport* report) override;
  using Backend::Ack;
  absl::Status Ack(absl::string_view id, uint64_t token,
                   absl::string_view result, absl::Time now,
                   std::vector<Settled>* settled) override;
  // Two operations of one write transaction.
  AckReserved AckAndReserve(absl::string_view id, uint64_t token,
                            absl::string_view result, absl::string_view topic,
                            int max, absl::Time now,
                            ReserveReport* report) override;
  // In one write transaction.
  using Backend::AckBatch;
  absl::StatusOr<std::vector<absl::Status>> AckBatch(
      absl::Span<const Lease> leases, absl::Time now,
      std::vector<Settled>* settled) override;
  using Backend::Fail;
  absl::StatusOr<FailOutcome> Fail(absl::string_view id, uint64_t token,
                                   absl::string_view error, absl::Time retry_at,
                                   absl::Time now,
                                   std::vector<Settled>* settled) override;
  absl::Status Release(absl::string_view id, uint64_t token, absl::Time run_at,
                       absl::Time now) override;
  absl::StatusOr<absl::Time> Touch(absl::string_view id, uint64_t token,
                                   absl::Time now) override;
  using Backend::Cancel;
  absl::Status Cancel(absl::string_view id, absl::Time now,
                      std::vector<Settled>* settled) override;
  absl::StatusOr<Job> Get(absl::string_view id) override;
  absl::StatusOr<std::vector<Job>> List(absl::string_view topic, JobState state,
                                        int limit) override;
  absl::StatusOr<JobPage> ListPage(absl::string_view topic, JobState state,
                                   int limit,
                                   absl::string_view cursor) override;
  absl::StatusOr<TopicStats> Stats(absl::string_view topic) override;
  absl::StatusOr<std::vector<std::string>> Topics() override;
  absl::StatusOr<int> Kick(absl::string_view topic, int max,
                           absl::Time now) override;
  absl::Status KickJob(absl::string_view id, absl::Time now) override;
  absl::StatusOr<std::vector<std::string>> KickIds(absl::string_view topic,
                                                   int max,
                                                   absl::Time now) override;
  absl::Status PromoteJob(absl::string_view id, absl::Time now) override;
  using Backend::PurgeDead;
  absl::StatusOr<int> PurgeDead(absl::string_view topic, int max,
                                absl::Time now,
                                std::vector<Settled>* settled) override;
  absl::StatusOr<PromoteResult> PromoteDue(absl::Time now, int limit) override;
  absl::StatusOr<absl::Time> NextDue() override;
  absl::Status SetPaused(absl::string_view topic, bool paused,
                         absl::Time now) override;
  absl::Status Replace(const NewJob& job, absl::Time now) override;
  absl::StatusOr<std::vector<std::string>> PausedTopics() override;
  absl::Status SetLimit(absl::string_view topic, const TopicLimit& limit,
                        absl::Time now) override;
  absl::Status ClearLimit(absl::string_view topic, absl::Time now) override;
  absl::StatusOr<std::vector<LimitedTopic>> Limits() override;
  // Schedules: internal/schedules.cc.
  absl::Status PutSchedule(const ScheduleRecord& schedule,
                           absl::Time now) override;
  absl::Status RemoveSchedule(absl::string_view name, absl::Time now) override;
  absl::StatusOr<std::vector<ScheduleRecord>> ListSchedules() override;
  absl::Status FireSchedule(absl::string_view name, int64_t revision,
                            absl::Time through, absl::Span<const NewJob> jobs,
                            absl::Time now) override;
  absl::StatusOr<std::unique_ptr<NewsSubscription>> Subscribe(
      NewsCallback on_news) override;
  // Counts: internal/counts.cc.
  absl::StatusOr<std::vector<TopicMinute>> Counts(absl::Time from,
                                                  absl::Time to) override;
  absl::StatusOr<std::vector<TopicTotals>> CountTotals() override;
  // The event log: internal/events.cc.
  absl::Status AppendEvents(absl::Span<const LoggedEvent> events) override;
  absl::Status OpenBatch(const NewJob& completion, absl::Time now) override;
  using Backend::CloseBatch;
  absl::Status CloseBatch(absl::string_view id, absl::Time now,
                          std::vector<Settled>* settled) override;
  absl::StatusOr<Batch> GetBatch(absl::string_view id) override;
  absl::StatusOr<std::vector<LoggedEvent>> JobEvents(absl::string_view id,
                                                     int limit) override;

  // AddWithin()
  //
  // Adds `jobs` through `db`, the application's connection to the file at
  // `path`, inside the transaction the application has open there, in a
  // savepoint of its own: InsertJobs(), the counts and the news, as Add()
  // does alone in a transaction. Returns the news to send once that
  // transaction commits. On an error, leaves the application's transaction
  // as it was. REQUIRES: a transaction open on `db`, delayq's schema at
  // this version (CheckSchemaForTransaction()).
  static absl::StatusOr<std::vector<std::string>> AddWithin(
      sqlite3* db, const std::string& path, absl::Span<const NewJob> jobs,
      absl::Time now);

  // For tests: see checkpointer.h and group_commit.h.
  friend Checkpointer::Counts CheckpointCountsForTest(Backend* backend);
  GroupCommit::State GroupStateForTest() { return group_.StateForTest(); }
  void SetCommitHookForTest(int (*hook)(void*), void* arg)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Every statement, prepared once.
  struct Statements {
    std::unique_ptr<Statement> begin, commit, insert, counter_get, counter_set,
        topic_due, all_due, next_due, anything_due, make_ready, make_dead,
        reserve_one, ack, lease, retry, release, touch, cancel, get, list_ready,
        list_timed, list_dead, stats, topics, dead_of_topic, kick, state_of,
        ready_count, topic_of, horizon_get, horizon_set, is_paused, pause,
        resume, paused_topics, replace, discard, drop_holds, is_held, hold,
        limit_get, limit_set, limit_tat, limit_clear, limits, state_count,
        schedule_get, schedule_put, schedule_remove, schedule_list,
        schedule_fire, counts_fold_minutes, counts_fold_totals,
        counts_fold_drop, counts_read, totals_read, counts_prune, promote_job,
        dead_ids, counter_bump, keep, drop_left_of_topic, drop_left,
        drop_soonest, list_done, acked_topic, savepoint, release_op,
        rollback_to, event_insert, event_trim, events_of_job, depend_on, wait,
        any_dependency, dependants, waiter, forget_waiter, release_waiter,
        list_waiting, batch_open, batch_get, batch_join, batch_member,
        batch_leave, batch_count, batch_close, after_add, after_of;
  };
  // A statement of Statements and its SQL.
  struct StatementEntry {
    std::unique_ptr<Statement> Statements::*stmt;
    const char* sql;
  };
  // Every statement the store runs, once.
  static absl::Span<const StatementEntry> AllStatements();

  // What became of a job that others may wait for.
  enum class DependencyOutcome {
    kMet,     // acknowledged
    kFailed,  // dead
    kGone,    // left the store unacknowledged
  };

  // What the running write transaction will announce once it commits (see
  // Subscribe()): only edges, found from what the transaction did.
  struct PendingNews {
    // The latest `now` of the transaction's operations.
    int64_t now_us = 0;
    // Per topic: jobs the transaction made ready minus those it reserved.
    absl::flat_hash_map<std::string, int64_t> ready_delta;
    // The earliest due time (run_at or lease deadline) it stored.
    std::optional<int64_t> earliest_due_us;
    // Topics it resumed, or freed a reservation of under a concurrency
    // cap: announced as ready when they have ready jobs.
    std::vector<std::string> look_again;
    // Schedules it stored or removed.
    std::vector<std::string> schedules;
  };

  SqliteBackend(std::unique_ptr<Connection> conn, std::string news_folder,
                const CountsOptions& counts, const EventLogOptions& events)
      : counts_options_(counts),
        events_options_(events),
        group_([this](absl::Span<GroupCommit::Op* const> ops) {
          CommitGroup(ops);
        }),
        conn_(std::move(conn)),
        news_folder_(news_folder),
        sender_(std::move(news_folder)) {}

  absl::Status PrepareAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Compiles every statement the store runs on `conn`, keeping none: a
  // file whose schema would fail one (a table, column or trigger that is
  // not delayq's) is refused before anything is written to it
  // (PrepareSchema()), not after.
  static absl::Status CompileAll(Connection* conn);

  // Runs `body` (which requires mu_) as one operation of the next group's
  // write transaction (`now`: the call's) and returns its result: its own
  // error, having changed nothing, or the group's when the transaction
  // could not begin or commit.
  absl::Status WriteTransaction(absl::Time now,
                                absl::FunctionRef<absl::Status()> body)
      ABSL_LOCKS_EXCLUDED(mu_) {
    return WriteTransaction(now, nullptr, body);
  }
  // The same, appending the jobs `body` settled to `settled` (when not
  // null) once the transaction committed.
  absl::Status WriteTransaction(absl::Time now, std::vector<Settled>* settled,
                                absl::FunctionRef<absl::Status()> body)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `body` as an operation whose `now` is now_us: inside a group's
  // transaction, what WriteTransaction() runs for each call. The jobs it
  // settles go to `settled` (when not null; cleared first, as an operation
  // of a group that failed may run again).
  absl::Status RunOp(int64_t now_us, absl::FunctionRef<absl::Status()> body,
                     std::vector<Settled>* settled = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // GroupCommit's Runner: BEGIN IMMEDIATE, each operation in a savepoint of
  // its own (alone: none needed), the counts, COMMIT; after the commit, the
  // news the operations noted. When BEGIN or COMMIT fails, or an
  // operation's error ends the transaction, every operation of the group
  // gets that error and nothing of the group stays.
  void CommitGroup(absl::Span<GroupCommit::Op* const> ops)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `op` in a savepoint, and on its error rolls back to it and forgets
  // what it noted. Returns an error only when the transaction itself failed.
  absl::Status RunInSavepoint(GroupCommit::Op* op)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the counts, collects the news and commits; the news to send.
  absl::StatusOr<std::vector<std::string>> FinishGroup()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Inserts `jobs` as Add() does; inside a write transaction.
  absl::Status InsertJobs(absl::Span<const NewJob> jobs, int64_t now_us)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // NotFound, before anything is written, unless every dependency of
  // `jobs` names a stored job or an earlier job of the batch.
  absl::Status CheckDependencies(absl::Span<const NewJob> jobs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes the just inserted `job` wait for its dependencies that are not
  // done, or applies its policy at once for one that is dead or gone.
  absl::Status AwaitDependencies(const NewJob& job, int64_t now_us)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads what `job` waits for (Job::after) when `after_count`, the job
  // row's count of them, says it waits for any; and, with `results`, the
  // results of those kept done now (Lease::dependency_results). A job
  // without dependencies costs no statement.
  absl::Status ReadAfter(int64_t after_count, Job* job,
                         std::map<std::string, std::string>* results = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Settles the jobs that wait for `id` after `outcome`, and in turn those
  // that wait for the ones that fail or go because of it; inside the write
  // transaction of the change, after the death-order counter was saved.
  absl::Status SettleDependants(absl::string_view id, DependencyOutcome outcome,
                                int64_t now_us)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether any job of the store waits for another or is an unfinished job
  // of a batch (whose finish SettleDependants() counts), read once per
  // write transaction: while it runs no other connection writes, so only
  // its own AwaitDependencies() and JoinBatch() can change the answer.
  absl::StatusOr<bool> AnyJobWaits() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Releases the waiting job `id` (row `seq`) of `topic`: ready, or
  // delayed until `run_at_us`; noting the news and the settled job.
  absl::Status ReleaseWaiter(absl::string_view id, int64_t seq,
                             absl::string_view topic, int64_t run_at_us,
                             int64_t now_us) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Batches (batches.cc). NotFound or FailedPrecondition (closed), before
  // anything is written, unless every batch `jobs` join is open.
  absl::Status CheckBatches(absl::Span<const NewJob> jobs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts the just inserted (and settled) `job` into its batch.
  absl::Status JoinBatch(const NewJob& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts job `id` finished after `outcome` when it is an unfinished job
  // of a batch, and releases the completion job when that completed it.
  absl::Status FinishInBatch(absl::string_view id, DependencyOutcome outcome,
                             int64_t now_us) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Releases batch `id`'s completion job, if it still waits.
  absl::Status ReleaseCompletion(absl::string_view id, int64_t now_us)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Sends the waiting job `seq` of `topic` dead with `error`, in death
  // order, and counts the death.
  absl::Status KillWaiter(int64_t seq, absl::string_view topic,
                          absl::string_view error, int64_t now_us)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes the job `id` as Cancel() does, and forgets what it waited for.
  absl::Status DropWaiter(absl::string_view id, int64_t now_us)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The next value of the death-order counter. Inside a write
  // transaction; the caller stores the last value it used with SaveCounter().
  absl::StatusOr<int64_t> LoadCounter() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status SaveCounter(int64_t value) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Moves up to `limit` due jobs from the rows `stmt` yields (delayed ->
  // ready, expired reservation -> ready or dead) and records the moves in
  // `out` (when not null). Returns whether `stmt` had more rows than `limit`.
  // A job whose expiry passed by `now_us` lapses instead (dead, or deleted
  // with its id held when it asked to be discarded).
  absl::StatusOr<bool> MoveDue(Statement* stmt, int limit, int64_t now_us,
                               std::vector<Transition>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Reserve()'s work, inside a write transaction: the topic's due jobs
  // promoted, then ReserveReady() unless the topic is paused.
  absl::Status ReserveInTransaction(absl::string_view topic, int max,
                                    int64_t now_us, std::vector<Lease>* leases,
                                    ReserveReport* report)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reserves up to `max` ready jobs of `topic` into `leases` (as far as
  // its limit allows, noting in `report` when the limit held jobs back).
  absl::Status ReserveReady(absl::string_view topic, int max, int64_t now_us,
                            std::vector<Lease>* leases, ReserveReport* report)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The topic's jobs in `state`.
  absl::StatusOr<int64_t> CountOf(absl::string_view topic, int state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A reservation of `topic` ended (its row already changed): when the
  // topic's concurrency cap was full, waiting workers of every process
  // look again.
  absl::Status NoteSlotFreed(absl::string_view topic)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same, for a topic whose concurrency cap (0: none) was read.
  absl::Status NoteSlotFreedUnder(absl::string_view topic, int64_t cap)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Ack()'s work, inside a write transaction. FailedPrecondition, having
  // changed nothing, when `token` is not the job's current reservation.
  absl::Status AckInTransaction(absl::string_view id, uint64_t token,
                                absl::string_view result, int64_t now_us)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Keeps the job reserved under `token` done with `result` when it has a
  // keep_for, and lets its topic's done jobs beyond its keep_at_most go.
  // Sets *kept to whether it did, and *topic, *unique_for_us when it did.
  absl::Status KeepDone(absl::string_view id, uint64_t token,
                        absl::string_view result, int64_t now_us, bool* kept,
                        std::string* topic, int64_t* unique_for_us)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Holds `id` until now_us + unique_for_us when that is a window (> 0).
  absl::Status HoldId(absl::string_view id, int64_t unique_for_us,
                      int64_t now_us) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // AlreadyExists when a dedup window holds `id`; windows that passed by
  // now were dropped first.
  absl::Status CheckNotHeld(absl::string_view id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Adds `delta` to `topic`'s counts of the running write transaction.
  void NoteCount(absl::string_view topic, const JobCounts& delta)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the counts the transaction noted in their minutes' recent rows,
  // and once a minute per connection folds the recent minutes before the
  // latest (FoldCounts()); inside the write transaction, before its commit.
  absl::Status WriteCounts() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Folds the recent minutes before `minute` (µs) into their minutes' rows
  // and the totals, and drops the minutes that left the window.
  absl::Status FoldCounts(int64_t minute) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // WriteCounts()'s UPDATE (or, with `insert`, INSERT) of a minute's row
  // naming the counts in `moved` (bit i: column i of DQ_COUNT_COLUMNS).
  absl::StatusOr<Statement*> CountWrite(uint32_t moved, bool insert)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Notes for the pending news; inside a write transaction.
  void NoteMadeReady(absl::string_view topic, int64_t n = 1)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NoteReserved(const Lease& lease) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NoteDue(int64_t at_us) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The messages of the pending news, read before the commit. A topic whose
  // ready jobs are all the transaction's own had none before. A due time is
  // announced when it is earlier than the horizon (the latest announced, see
  // news.h), or the horizon has passed: while the horizon lies ahead, every
  // subscriber already wakes by then and reads the store. Subscribe() hands
  // a new subscriber the horizon as its first news, so that holds for it too.
  // The horizon this call announces is stored with the change.
  absl::StatusOr<std::vector<std::string>> CollectNews()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The horizon, if any has been announced.
  absl::StatusOr<std::optional<int64_t>> ReadHorizon()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CountsOptions counts_options_;
  const EventLogOptions events_options_;
  GroupCommit group_;
  // The store's own connection's checkpoints (none on a borrowed one).
  // Before conn_: the connection, whose WAL hook it is, closes first.
  std::unique_ptr<Checkpointer> checkpointer_;
  internal::Mutex mu_;
  std::unique_ptr<Connection> conn_ ABSL_GUARDED_BY(mu_);
  Statements s_ ABSL_GUARDED_BY(mu_);
  const std::string news_folder_;
  NewsSender sender_ ABSL_GUARDED_BY(mu_);
  PendingNews pending_ ABSL_GUARDED_BY(mu_);
  // The running operation's `now` (µs): its counts go in its minute.
  int64_t op_now_us_ ABSL_GUARDED_BY(mu_) = 0;
  // The counts the running write transaction noted, by minute, then topic.
  using TopicCounts = absl::flat_hash_map<std::string, JobCounts>;
  absl::flat_hash_map<int64_t, TopicCounts> pending_counts_
      ABSL_GUARDED_BY(mu_);
  // The statements of WriteCounts(), prepared when first needed
  // (CountWrite()).
  absl::flat_hash_map<uint32_t, std::unique_ptr<Statement>> count_writes_
      ABSL_GUARDED_BY(mu_);
  // Where the running operation reports the jobs it settles (RunOp()).
  std::vector<Settled>* settled_ ABSL_GUARDED_BY(mu_) = nullptr;
  // AnyJobWaits() of the running write transaction, once read (or once
  // it made a job wait); cleared when a transaction begins.
  std::optional<bool> jobs_wait_ ABSL_GUARDED_BY(mu_);
  // The latest minute whose older minutes this connection folded.
  int64_t folded_at_minute_us_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sqlite_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_SQLITE_INTERNAL_BACKEND_IMPL_H_
