// Copyright delayq authors.
//
// backend_impl.h — the PostgreSQL Backend class, shared by the file of its
// writes (postgres_backend.cc), its reads (reads.cc), schedules
// (schedules.cc) and counts (counts.cc).

#ifndef DELAYQ_BACKENDS_POSTGRES_INTERNAL_BACKEND_IMPL_H_
#define DELAYQ_BACKENDS_POSTGRES_INTERNAL_BACKEND_IMPL_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "backends/postgres/internal/connection.h"
#include "backends/postgres/internal/pool.h"
#include "delayq/backend.h"
#include "delayq/postgres_backend.h"
#include "src/common/stored_state.h"

namespace delayq {
namespace postgres_internal {

// Job states as stored, and back (src/common/stored_state.h).
using internal::StateFromInt;
using internal::StateToInt;

// Decodes row `row` of DQ_PG_JOB_COLUMNS. Sets *token when not null.
Job ReadJob(const Result& r, int row, uint64_t* token = nullptr);

// A DQ_PG_MOVE_DUE() statement's parameters after its first (`params`):
// the time, one row more than `limit`, `limit`, and the errors of the jobs
// it kills.
Params& MoveDueParams(Params& params, int64_t now_us, int limit);

// Whether the job of row `row` of DQ_PG_JOB_COLUMNS waits, or waited, for
// others: whether ReadAfter() has anything to read of it.
bool HasAfter(const Result& r, int row);

// A job whose Job::after ReadAfter() fills, and, when not null, the map
// that gets the results of its dependencies kept done now.
struct AfterOf {
  Job* job;
  std::map<std::string, std::string>* results;
};

// Fills what each job of `jobs` waits for, in one statement; none for none.
absl::Status ReadAfter(Connection& conn, absl::string_view schema,
                       absl::Span<const AfterOf> jobs);

// Decodes row `row` of DQ_PG_SCHEDULE_COLUMNS.
ScheduleRecord ReadSchedule(const Result& r, int row);

// What a write transaction will announce when it commits (see
// Subscribe()): only edges, found from what it did.
struct PendingNews {
  // Per topic: jobs the transaction made ready minus those it reserved.
  std::map<std::string, int64_t> ready_delta;
  // The earliest due time (run_at or lease deadline) it stored.
  std::optional<int64_t> earliest_due_us;
  // Topics it resumed, or freed a reservation of under a full concurrency
  // cap: announced as ready when they have ready jobs.
  std::vector<std::string> look_again;
  // Schedules it stored or removed.
  std::vector<std::string> schedules;
};

// Tx
//
// One write transaction: its connection, its call's `now`, and what it
// noted for the news and the counts it writes before its commit.
struct Tx {
  Connection* conn = nullptr;
  int64_t now_us = 0;
  PendingNews news;
  // Counts by (minute µs, topic).
  std::map<std::pair<int64_t, std::string>, JobCounts> counts;
  // Whether the commit waits for its WAL to reach the disk. A promotion's
  // need not: lost in a crash, it leaves its jobs due, and the next look
  // moves them again; and any later commit that waits flushes the WAL
  // before it, so nothing durable builds on a promotion that is lost.
  bool durable = true;
  // Whether the body's last statement committed the transaction
  // (Connection::CommitWithNext()): Finish() has nothing left to do.
  bool committed = false;
  // Whether the body may commit with its last statement, Tail() between
  // them (Add(): nothing follows the insert).
  bool commit_with_last = false;
  // Whether due news moves the store's horizon. Not in the application's
  // transaction (EnqueueInTransaction()): the row's lock would last as
  // long as that does, so the news goes out without comparing.
  bool move_horizon = true;
  // The jobs the transaction settled (Backend's `settled`).
  std::vector<Settled> settled;
};

// PostgresBackend
//
// Every call takes a connection of the pool for its duration. A write is
// one transaction (Transaction()); a read one statement.
class PostgresBackend : public Backend {
 public:
  static absl::StatusOr<std::unique_ptr<Backend>> Open(
      const PostgresOptions& options);

  std::string Name() const override { return "postgres"; }
  absl::Status Add(absl::Span<const NewJob> jobs, absl::Time now) override;
  using Backend::Reserve;
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Time now,
                                             ReserveReport* report) override;
  using Backend::Ack;
  absl::Status Ack(absl::string_view id, uint64_t token,
                   absl::string_view result, absl::Time now,
                   std::vector<Settled>* settled) override;
  // In one transaction when both are plain (plain_paths.cc).
  AckReserved AckAndReserve(absl::string_view id, uint64_t token,
                            absl::string_view result, absl::string_view topic,
                            int max, absl::Time now,
                            ReserveReport* report) override;
  // In one transaction.
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
  // Schedules: schedules.cc.
  absl::Status PutSchedule(const ScheduleRecord& schedule,
                           absl::Time now) override;
  absl::Status RemoveSchedule(absl::string_view name, absl::Time now) override;
  absl::StatusOr<std::vector<ScheduleRecord>> ListSchedules() override;
  absl::Status FireSchedule(absl::string_view name, int64_t revision,
                            absl::Time through, absl::Span<const NewJob> jobs,
                            absl::Time now) override;
  // News: news.cc.
  absl::StatusOr<std::unique_ptr<NewsSubscription>> Subscribe(
      NewsCallback on_news) override;
  // Counts: counts.cc.
  absl::StatusOr<std::vector<TopicMinute>> Counts(absl::Time from,
                                                  absl::Time to) override;
  absl::StatusOr<std::vector<TopicTotals>> CountTotals() override;
  // The event log: events.cc.
  absl::Status AppendEvents(absl::Span<const LoggedEvent> events) override;
  absl::StatusOr<std::vector<LoggedEvent>> JobEvents(absl::string_view id,
                                                     int limit) override;
  // Batches: batches.cc.
  absl::Status OpenBatch(const NewJob& completion, absl::Time now) override;
  using Backend::CloseBatch;
  absl::Status CloseBatch(absl::string_view id, absl::Time now,
                          std::vector<Settled>* settled) override;
  absl::StatusOr<Batch> GetBatch(absl::string_view id) override;

  // Adds `jobs` as Add() does, with their counts and news, on `conn`, in
  // the transaction open on it (EnqueueInTransaction()), inside a
  // savepoint: on an error the transaction is as it was before the call.
  static absl::Status AddWithin(Connection* conn, absl::string_view schema,
                                absl::Span<const NewJob> jobs, absl::Time now);

 private:
  PostgresBackend(std::unique_ptr<Pool> pool, std::string schema,
                  const CountsOptions& counts, const EventLogOptions& events)
      : pool_(std::move(pool)),
        schema_(std::move(schema)),
        counts_options_(counts),
        events_options_(events) {}

  // `sql` in this store's schema.
  std::string S(const char* sql) const;

  // Runs `body` in one transaction on a connection of the pool, then
  // writes the counts and news it noted and commits. Its error rolls it
  // back. A deadlock or serialisation failure runs it again (the body
  // must start from nothing each time); a connection of the pool found
  // lost at BEGIN is replaced.
  absl::Status Transaction(absl::Time now,
                           absl::FunctionRef<absl::Status(Tx&)> body) {
    return Transaction(now, nullptr, body);
  }
  // The same, appending the jobs it settled (Tx::settled) to `settled`
  // (when not null) once it committed.
  absl::Status Transaction(absl::Time now, std::vector<Settled>* settled,
                           absl::FunctionRef<absl::Status(Tx&)> body);
  // Runs `body` (reads) on a connection of the pool; a connection found
  // lost is replaced once.
  absl::Status Read(absl::FunctionRef<absl::Status(Connection&)> body);
  // Transaction()'s end: Tail() and COMMIT, in one round trip.
  absl::Status Finish(Tx& tx);
  // Runs Tail() (EnqueueInTransaction(): the application commits).
  absl::Status Announce(Tx& tx);
  // The statements that write the counts and send the news the
  // transaction noted.
  absl::StatusOr<std::vector<std::string>> Tail(Tx& tx);

  // Inserts `jobs` as Add() does.
  absl::Status InsertJobs(Tx& tx, absl::Span<const NewJob> jobs);

  // A worker's first calls on a connection of the server's are slow: the
  // server compiles each PL/pgSQL function, plans its statements and
  // loads the tables' descriptions on its first use in the session (3 to
  // 30 ms each, against 0.2 ms after). Once the process has reserved
  // (reserving_), each connection the pool hands out is warmed up before
  // its first use (plain_paths.cc): one job is added, reserved and
  // acknowledged, and the due jobs looked for, on the plain paths'
  // statements, in a transaction rolled back. A worker's first jobs then
  // do not wait for it at the moment they come due. Nothing it does
  // stays: no job, count, event or news (NOTIFY goes out at COMMIT).
  void WarmUp(Connection* conn, absl::Time now);

  // The plain paths (plain_paths.cc): a reservation or acknowledgement
  // with nothing to do but the transition itself, in one round trip. Each
  // says whether it was plain (done); if not, it changed nothing and the
  // caller takes the general path.
  //
  // Whether the plain paths may be taken at `now`: not when the minute's
  // fold of the counts is due (the general path does it).
  bool PlainPathsOpen(absl::Time now) const;
  // `report` may be null; the jobs it promoted go to report->moved.
  absl::StatusOr<bool> ReservePlain(absl::string_view topic, int max,
                                    absl::Time now, ReserveReport* report,
                                    std::vector<Lease>* leases);
  absl::StatusOr<bool> AckPlain(absl::string_view id, uint64_t token,
                                absl::Time now);
  // AckPlain() then ReservePlain() in one transaction: nullopt when the
  // ack was not plain (nothing done), else whether the reservation was.
  absl::StatusOr<std::optional<bool>> AckAndReservePlain(
      absl::string_view id, uint64_t token, absl::string_view topic, int max,
      absl::Time now, ReserveReport* report, std::vector<Lease>* leases);
  // A plain reservation's function `sql` in one transaction and round
  // trip: its parameters are `first` and then the reservation's; `read`
  // reads its rows (into `leases` and report->moved, which it starts
  // afresh on each try). `*waits` when a job it would lease waits for
  // others: the function undid everything, and the general path reads
  // their results.
  absl::Status RunPlainReservation(const char* sql, const Params& first,
                                   absl::string_view topic, int max,
                                   absl::Time now, ReserveReport* report,
                                   std::vector<Lease>* leases, bool* waits,
                                   absl::FunctionRef<void(const Result&)> read);
  // The leases and promotions of a plain reservation's rows into `leases`
  // and report->moved; false for the row that says it was not plain.
  bool ReadPlainReservation(const Result& rows, ReserveReport* report,
                            std::vector<Lease>* leases) const;
  // Reserve() past its plain path.
  absl::StatusOr<std::vector<Lease>> ReserveGeneral(absl::string_view topic,
                                                    int max, absl::Time now,
                                                    ReserveReport* report);
  // Notes the due jobs a DQ_PG_MOVE_DUE() statement moved (`rows`, their
  // columns from `col` on) for the news and counts, and appends them to
  // `out` when not null. Whether more than `limit` were due.
  absl::StatusOr<bool> MoveDue(Tx& tx, const Result& rows, int col, int limit,
                               std::vector<Transition>* out);
  // A topic's limit as stored, and its bucket.
  struct Gate {
    TopicLimit limit;
    int64_t tat_us;
  };
  // Reserves up to `max` ready jobs of `topic` into `leases`, as far as
  // its limit (if any) allows, noting in *limited_until when it held jobs
  // back.
  absl::Status ReserveReady(Tx& tx, absl::string_view topic, int max,
                            const std::optional<Gate>& limit,
                            absl::string_view holder,
                            std::vector<Lease>* leases,
                            absl::Time* limited_until);
  // Up to `bound` of `topic`'s jobs in `state`, kStateReady or
  // kStateReserved.
  absl::StatusOr<int64_t> CountUpTo(Connection& conn, absl::string_view topic,
                                    int state, int64_t bound);
  // A reservation of `topic` ended: when the topic's concurrency cap
  // (`cap`, 0: none; read it when not given) was full, waiting workers of
  // every process look again.
  absl::Status NoteSlotFreed(Tx& tx, absl::string_view topic,
                             std::optional<int64_t> cap = std::nullopt);
  // Ack()'s work inside a transaction.
  absl::Status AckInTransaction(Tx& tx, absl::string_view id, uint64_t token,
                                absl::string_view result);
  // Keeps the job reserved under `token` done with `result` when it has a
  // keep_for; *kept says whether it did.
  absl::Status KeepDone(Tx& tx, absl::string_view id, uint64_t token,
                        absl::string_view result, bool* kept,
                        std::string* topic, int64_t* unique_for_us);
  // Holds `id` until now + unique_for_us when that is a window (> 0).
  absl::Status HoldId(Tx& tx, absl::string_view id, int64_t unique_for_us);
  // The job `id` locked: its seq, state and topic; NotFound when none.
  struct Row {
    int64_t seq;
    int64_t state;
    std::string topic;
  };
  absl::StatusOr<Row> LockJob(Tx& tx, absl::string_view id);

  // What became of a job that others may wait for.
  enum class DependencyOutcome {
    kMet,     // acknowledged
    kFailed,  // dead
    kGone,    // left the store unacknowledged
  };
  // NotFound, before anything is written, unless every dependency of
  // `jobs` names a stored job (locked from then on) or an earlier job of
  // the batch.
  absl::Status CheckDependencies(Tx& tx, absl::Span<const NewJob> jobs);
  // Makes the just inserted `job` wait for its dependencies that are not
  // done, or applies its policy at once for one that is dead or gone.
  absl::Status AwaitDependencies(Tx& tx, const NewJob& job);
  // Settles the jobs that wait for `id` after `outcome`, and in turn those
  // that wait for the ones that fail or go because of it.
  absl::Status SettleDependants(Tx& tx, absl::string_view id,
                                DependencyOutcome outcome);
  // Deletes the job `id` as Cancel() does, and forgets what it waited for.
  absl::Status DropWaiter(Tx& tx, absl::string_view id);
  // Sends the waiting job `seq` of `topic` dead with `error` (a
  // dependency's failure), and counts the death.
  absl::Status KillWaiter(Tx& tx, int64_t seq, absl::string_view topic,
                          absl::string_view error);
  // Releases the waiting job `id` (row `seq`), ready or delayed until its
  // run_at; locked first (see kLockWaiter). Noted as settled.
  absl::Status ReleaseWaiter(Tx& tx, absl::string_view id, int64_t seq,
                             absl::string_view topic, int64_t run_at_us);

  // Counts the just inserted (and settled) `job` into its batch: NotFound
  // or FailedPrecondition (closed) when the batch takes no jobs.
  absl::Status JoinBatch(Tx& tx, const NewJob& job);
  // Counts a job of `batch` finished after `outcome`, and releases the
  // completion job when that completed the batch.
  absl::Status FinishInBatch(Tx& tx, absl::string_view batch,
                             DependencyOutcome outcome);
  // Releases batch `id`'s completion job, if it still waits.
  absl::Status ReleaseCompletion(Tx& tx, absl::string_view id);

  // Notes for the news and counts of the running transaction.
  static void NoteMadeReady(Tx& tx, absl::string_view topic, int64_t n = 1);
  static void NoteReserved(Tx& tx, const Lease& lease);
  static void NoteDue(Tx& tx, int64_t at_us);
  void NoteCount(Tx& tx, absl::string_view topic, const JobCounts& delta) const;
  // The statement that writes the counts the transaction noted. Once a
  // minute a process first folds the recent counts, drops the minutes that
  // left the window and the dedup windows that passed.
  absl::StatusOr<std::vector<std::string>> CountsStatements(Tx& tx);
  // The statements that announce the news the transaction noted (see
  // news.h), each deciding in SQL whether there is any, and move the
  // horizon with the due news.
  std::vector<std::string> NewsStatements(const Tx& tx) const;

  const std::unique_ptr<Pool> pool_;
  const std::string schema_;
  const CountsOptions counts_options_;
  const EventLogOptions events_options_;
  // The latest minute (µs) before which this process folded the counts.
  std::atomic<int64_t> folded_at_minute_us_{0};
  // Whether this process has reserved: its connections then serve
  // workers, and are warmed up (WarmUp()).
  std::atomic<bool> reserving_{false};
};

}  // namespace postgres_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_POSTGRES_INTERNAL_BACKEND_IMPL_H_
