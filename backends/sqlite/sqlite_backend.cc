// Copyright delayq authors.
//
// The SQLite Backend's writes: one connection per object behind a mutex;
// the calls of threads that write at the same moment share one transaction
// (internal/group_commit.h), each in a savepoint of its own. Reads in
// internal/reads.cc, schema in internal/schema.cc, SQL in
// internal/statements.h.

#include "delayq/sqlite_backend.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/random/distributions.h"
#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/sqlite/internal/backend_impl.h"
#include "backends/sqlite/internal/db.h"
#include "backends/sqlite/internal/schema.h"
#include "backends/sqlite/internal/statements.h"
#include "src/common/backoff_code.h"
#include "src/common/contract_errors.h"
#include "src/common/lease_token.h"
#include "src/common/limit_gate.h"
#include "src/common/settled_list.h"
#include "src/common/status_macros.h"
#include "src/common/transition_counts.h"

namespace delayq {
namespace sqlite_internal {
namespace {

// Opens the file and brings its schema to this version. Processes that open
// a new file at once race to create its schema and to switch it to WAL
// mode: SQLite answers a loser BUSY (the switch to WAL does not wait in the
// busy handler) or, while the file changes mode under it, an I/O error. A
// loser starts again on a new connection until busy_timeout has passed,
// after a random pause that doubles each time: every try reads the file
// first, and losers that tried again at once would keep the winner from
// the exclusive lock its switch to WAL needs (seen with several processes
// on a loaded machine: all of them gave up).
absl::StatusOr<std::unique_ptr<Connection>> OpenWithSchema(
    const SqliteOptions& options,
    absl::FunctionRef<absl::Status(Connection*)> compile) {
  const absl::Time give_up = absl::Now() + options.busy_timeout;
  absl::BitGen random;
  absl::Duration pause = absl::Milliseconds(1);
  for (;;) {
    DQ_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn,
                        Connection::Open(options.path, options.busy_timeout));
    const absl::Status prepared =
        PrepareSchema(conn.get(), options.page_size, compile);
    if (prepared.ok()) return conn;
    if (!absl::IsUnavailable(prepared) || absl::Now() >= give_up) {
      return prepared;
    }
    conn.reset();
    absl::SleepFor(pause * absl::Uniform(random, 0.5, 1.5));
    pause = std::min(pause * 2, absl::Milliseconds(100));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> SqliteBackend::Open(
    const SqliteOptions& options) {
  if (options.path.empty()) {
    return absl::InvalidArgumentError("sqlite: empty database path");
  }
  // SQLite would read a path that starts with "file:" as a URI, with
  // options of its own, and open another file than the one checked here.
  if (absl::StartsWith(options.path, "file:")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sqlite ", options.path,
        ": SQLite URIs (file:...) are not taken; give the file's path, and "
        "options as URL parameters or SqliteOptions"));
  }
  if (options.wal_autocheckpoint_pages < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sqlite ", options.path, ": negative wal_autocheckpoint_pages"));
  }
  if (!ValidPageSize(options.page_size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sqlite ", options.path, ": page_size ", options.page_size,
                     " is not a power of two from 512 to 65536"));
  }
  DQ_RETURN_IF_ERROR(internal::CheckCountsOptions(
      absl::StrCat("sqlite ", options.path), options.counts));
  if (options.busy_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sqlite ", options.path, ": negative busy_timeout"));
  }
  // A file whose version says it is delayq's but whose tables are not
  // those of that version (damaged, or altered by hand) fails to compile
  // delayq's statements: SQLite calls that a plain error, which would read
  // as delayq's own (Internal); for the caller the file is damaged.
  auto damaged = [](absl::Status s) {
    if (!absl::IsInternal(s)) return s;
    return absl::DataLossError(
        absl::StrCat(s.message(), "; the file's tables are not delayq's"));
  };
  absl::StatusOr<std::unique_ptr<Connection>> opened =
      OpenWithSchema(options, &SqliteBackend::CompileAll);
  if (!opened.ok()) return damaged(opened.status());
  std::unique_ptr<Connection> conn = *std::move(opened);
  DQ_RETURN_IF_ERROR(
      conn->Exec(options.durability == SqliteOptions::Durability::kFull
                     ? "PRAGMA synchronous = FULL"
                     : "PRAGMA synchronous = NORMAL",
                 "set durability"));
  // Every write of a transaction of several statements keeps a statement
  // journal (the count triggers make each one a multi-row write that may
  // abort). With temporary data on file (the default), that journal is a
  // 64 KiB buffer that spills to a file when full, allocated and freed
  // once per statement; glibc gives the freed top of its heap back to the
  // kernel each time and faults it in again for the next one: a reserve
  // of 100 jobs cost 1.6 times as much, and their ack 2.2 times. In
  // memory, the journal grows in blocks of 1 KiB that malloc keeps for
  // reuse. That is 3-5% dearer than the buffer in a host that keeps freed
  // heap (mallopt(M_TOP_PAD)), but no host has to. Nothing else kept in
  // memory grows with the store: delayq's statements sort and group only
  // through indexes, and their only temporary tables are RETURNING buffers
  // of one row (EXPLAIN of every statement). Schema
  // upgrades, whose index builds sort every job, ran above, before this.
  DQ_RETURN_IF_ERROR(
      conn->Exec("PRAGMA temp_store = MEMORY", "set temp_store"));
  std::unique_ptr<SqliteBackend> backend(
      new SqliteBackend(std::move(conn), NewsFolder(options.path),
                        options.counts, options.events));
  {
    internal::MutexLock lock(&backend->mu_);
    // Checkpoints off the callers' commits (checkpointer.h).
    backend->checkpointer_ = std::make_unique<Checkpointer>(
        options.path, options.wal_autocheckpoint_pages, options.busy_timeout);
    backend->checkpointer_->Attach(backend->conn_->db());
    DQ_RETURN_IF_ERROR(damaged(backend->PrepareAll()));
  }
  return std::unique_ptr<Backend>(std::move(backend));
}

absl::Span<const SqliteBackend::StatementEntry> SqliteBackend::AllStatements() {
  static constexpr StatementEntry kEntries[] = {
      {&Statements::begin, Sql::kBegin},
      {&Statements::commit, Sql::kCommit},
      {&Statements::savepoint, Sql::kSavepoint},
      {&Statements::release_op, Sql::kReleaseOp},
      {&Statements::rollback_to, Sql::kRollbackTo},
      {&Statements::insert, Sql::kInsert},
      {&Statements::counter_get, Sql::kCounterGet},
      {&Statements::counter_set, Sql::kCounterSet},
      {&Statements::topic_due, Sql::kTopicDue},
      {&Statements::all_due, Sql::kAllDue},
      {&Statements::next_due, Sql::kNextDue},
      {&Statements::anything_due, Sql::kAnythingDue},
      {&Statements::make_ready, Sql::kMakeReady},
      {&Statements::make_dead, Sql::kMakeDead},
      {&Statements::reserve_one, Sql::kReserveOne},
      {&Statements::ack, Sql::kAck},
      {&Statements::lease, Sql::kLease},
      {&Statements::retry, Sql::kRetry},
      {&Statements::release, Sql::kRelease},
      {&Statements::touch, Sql::kTouch},
      {&Statements::cancel, Sql::kCancel},
      {&Statements::get, Sql::kGet},
      {&Statements::list_ready, Sql::kListReady},
      {&Statements::list_timed, Sql::kListTimed},
      {&Statements::list_dead, Sql::kListDead},
      {&Statements::stats, Sql::kStats},
      {&Statements::topics, Sql::kTopics},
      {&Statements::dead_of_topic, Sql::kDeadOfTopic},
      {&Statements::kick, Sql::kKick},
      {&Statements::state_of, Sql::kStateOf},
      {&Statements::ready_count, Sql::kReadyCount},
      {&Statements::topic_of, Sql::kTopicOf},
      {&Statements::horizon_get, Sql::kHorizonGet},
      {&Statements::horizon_set, Sql::kHorizonSet},
      {&Statements::is_paused, Sql::kIsPaused},
      {&Statements::pause, Sql::kPause},
      {&Statements::resume, Sql::kResume},
      {&Statements::paused_topics, Sql::kPausedTopics},
      {&Statements::replace, Sql::kReplace},
      {&Statements::discard, Sql::kDiscard},
      {&Statements::drop_holds, Sql::kDropHolds},
      {&Statements::is_held, Sql::kIsHeld},
      {&Statements::hold, Sql::kHold},
      {&Statements::limit_get, Sql::kLimitGet},
      {&Statements::limit_set, Sql::kLimitSet},
      {&Statements::limit_tat, Sql::kLimitTat},
      {&Statements::limit_clear, Sql::kLimitClear},
      {&Statements::limits, Sql::kLimits},
      {&Statements::state_count, Sql::kStateCount},
      {&Statements::schedule_get, Sql::kScheduleGet},
      {&Statements::schedule_put, Sql::kSchedulePut},
      {&Statements::schedule_remove, Sql::kScheduleRemove},
      {&Statements::schedule_list, Sql::kScheduleList},
      {&Statements::schedule_fire, Sql::kScheduleFire},
      {&Statements::counts_fold_minutes, Sql::kCountsFoldMinutes},
      {&Statements::counts_fold_totals, Sql::kCountsFoldTotals},
      {&Statements::counts_fold_drop, Sql::kCountsFoldDrop},
      {&Statements::counts_read, Sql::kCountsRead},
      {&Statements::totals_read, Sql::kTotalsRead},
      {&Statements::counts_prune, Sql::kCountsPrune},
      {&Statements::event_insert, Sql::kEventInsert},
      {&Statements::event_trim, Sql::kEventTrim},
      {&Statements::events_of_job, Sql::kEventsOfJob},
      {&Statements::promote_job, Sql::kPromoteJob},
      {&Statements::dead_ids, Sql::kDeadIds},
      {&Statements::counter_bump, Sql::kCounterBump},
      {&Statements::keep, Sql::kKeep},
      {&Statements::drop_left_of_topic, Sql::kDropLeftOfTopic},
      {&Statements::drop_left, Sql::kDropLeft},
      {&Statements::drop_soonest, Sql::kDropSoonest},
      {&Statements::list_done, Sql::kListDone},
      {&Statements::acked_topic, Sql::kAckedTopic},
      {&Statements::depend_on, Sql::kDependOn},
      {&Statements::wait, Sql::kWait},
      {&Statements::any_dependency, Sql::kAnyDependency},
      {&Statements::dependants, Sql::kDependants},
      {&Statements::waiter, Sql::kWaiter},
      {&Statements::forget_waiter, Sql::kForgetWaiter},
      {&Statements::release_waiter, Sql::kReleaseWaiter},
      {&Statements::list_waiting, Sql::kListWaiting},
      {&Statements::batch_open, Sql::kBatchOpen},
      {&Statements::batch_get, Sql::kBatchGet},
      {&Statements::batch_join, Sql::kBatchJoin},
      {&Statements::batch_member, Sql::kBatchMember},
      {&Statements::batch_leave, Sql::kBatchLeave},
      {&Statements::batch_count, Sql::kBatchCount},
      {&Statements::batch_close, Sql::kBatchClose},
      {&Statements::after_add, Sql::kAfterAdd},
      {&Statements::after_of, Sql::kAfterOf},
  };
  return kEntries;
}

absl::Status SqliteBackend::PrepareAll() {
  for (const StatementEntry& e : AllStatements()) {
    DQ_ASSIGN_OR_RETURN(s_.*e.stmt, conn_->Prepare(e.sql));
  }
  return absl::OkStatus();
}

absl::Status SqliteBackend::CompileAll(Connection* conn) {
  for (const StatementEntry& e : AllStatements()) {
    DQ_RETURN_IF_ERROR(conn->Prepare(e.sql).status());
  }
  return absl::OkStatus();
}

absl::Status SqliteBackend::WriteTransaction(
    absl::Time now, std::vector<Settled>* settled,
    absl::FunctionRef<absl::Status()> body) {
  const int64_t now_us = ToMicros(now);
  std::vector<Settled> got;
  absl::Status status = group_.Run([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return RunOp(now_us, body, settled == nullptr ? nullptr : &got);
  });
  if (status.ok()) internal::AppendSettled(std::move(got), settled);
  return status;
}

absl::Status SqliteBackend::RunOp(int64_t now_us,
                                  absl::FunctionRef<absl::Status()> body,
                                  std::vector<Settled>* settled) {
  op_now_us_ = now_us;
  pending_.now_us = std::max(pending_.now_us, now_us);
  if (settled != nullptr) settled->clear();
  const internal::SettledTo to(&settled_, settled);
  return body();
}

namespace {

// Runs a statement that returns no rows (BEGIN, SAVEPOINT, COMMIT...).
absl::Status RunStep(Statement* s) {
  ScopedReset reset(s);
  return s->Run().status();
}

}  // namespace

void SqliteBackend::CommitGroup(absl::Span<GroupCommit::Op* const> ops) {
  internal::MutexLock lock(&mu_);
  pending_ = PendingNews();
  pending_.now_us = std::numeric_limits<int64_t>::min();
  pending_counts_.clear();
  jobs_wait_.reset();
  const int64_t folded_before = folded_at_minute_us_;
  absl::Status group = RunStep(s_.begin.get());
  if (group.ok() && ops.size() == 1) {
    // Alone, the transaction is the operation's: its error rolls it back.
    ops[0]->result = ops[0]->body();
    group = ops[0]->result;
  } else if (group.ok()) {
    for (GroupCommit::Op* op : ops) {
      group = RunInSavepoint(op);
      if (!group.ok()) break;
    }
  }
  absl::StatusOr<std::vector<std::string>> news =
      group.ok() ? FinishGroup() : group;
  if (!news.ok()) {
    conn_->Rollback();
    folded_at_minute_us_ = folded_before;
    for (GroupCommit::Op* op : ops) op->result = news.status();
    return;
  }
  // After the commit: a subscriber that hears the news sees the change.
  if (!news->empty()) sender_.Send(*news);
}

absl::Status SqliteBackend::RunInSavepoint(GroupCommit::Op* op) {
  DQ_RETURN_IF_ERROR(RunStep(s_.savepoint.get()));
  // What the operation notes is forgotten with its writes.
  PendingNews news_before = pending_;
  auto counts_before = pending_counts_;
  op->result = op->body();
  if (op->result.ok()) return RunStep(s_.release_op.get());
  // Some errors (a full disk, an I/O error) end the whole transaction.
  if (!conn_->InTransaction()) return op->result;
  pending_ = std::move(news_before);
  pending_counts_ = std::move(counts_before);
  DQ_RETURN_IF_ERROR(RunStep(s_.rollback_to.get()));
  return RunStep(s_.release_op.get());
}

absl::StatusOr<std::vector<std::string>> SqliteBackend::FinishGroup() {
  DQ_RETURN_IF_ERROR(WriteCounts());
  DQ_ASSIGN_OR_RETURN(std::vector<std::string> news, CollectNews());
  DQ_RETURN_IF_ERROR(RunStep(s_.commit.get()));
  return news;
}

void SqliteBackend::NoteMadeReady(absl::string_view topic, int64_t n) {
  pending_.ready_delta[topic] += n;
}

void SqliteBackend::NoteReserved(const Lease& lease) {
  // Only topics the transaction made ready are of interest.
  auto it = pending_.ready_delta.find(lease.job.topic);
  if (it != pending_.ready_delta.end()) --it->second;
  NoteDue(ToMicros(lease.deadline));
}

void SqliteBackend::NoteDue(int64_t at_us) {
  if (!pending_.earliest_due_us || at_us < *pending_.earliest_due_us) {
    pending_.earliest_due_us = at_us;
  }
}

absl::StatusOr<std::vector<std::string>> SqliteBackend::CollectNews() {
  std::vector<std::string> news;
  for (const auto& [topic, delta] : pending_.ready_delta) {
    if (delta <= 0) continue;  // cannot have been empty and now have jobs
    ScopedReset reset(s_.ready_count.get());
    s_.ready_count->BindText(1, topic);
    DQ_ASSIGN_OR_RETURN(bool row, s_.ready_count->Step());
    const int64_t now_ready = row ? s_.ready_count->Int64(0) : 0;
    if (now_ready > 0 && now_ready == delta)
      news.push_back(ReadyMessage(topic));
  }
  for (const std::string& topic : pending_.look_again) {
    ScopedReset reset(s_.ready_count.get());
    s_.ready_count->BindText(1, topic);
    DQ_ASSIGN_OR_RETURN(bool row, s_.ready_count->Step());
    if (row && s_.ready_count->Int64(0) > 0) {
      news.push_back(ReadyMessage(topic));
    }
  }
  if (pending_.earliest_due_us) {
    const int64_t at = *pending_.earliest_due_us;
    DQ_ASSIGN_OR_RETURN(std::optional<int64_t> horizon, ReadHorizon());
    if (!horizon || at < *horizon || *horizon <= pending_.now_us) {
      ScopedReset reset(s_.horizon_set.get());
      s_.horizon_set->BindInt64(1, at);
      DQ_RETURN_IF_ERROR(s_.horizon_set->Run().status());
      news.push_back(DueMessage(at));
    }
  }
  for (const std::string& name : pending_.schedules) {
    news.push_back(SchedulesMessage(name));
  }
  return news;
}

absl::StatusOr<std::optional<int64_t>> SqliteBackend::ReadHorizon() {
  ScopedReset reset(s_.horizon_get.get());
  DQ_ASSIGN_OR_RETURN(bool row, s_.horizon_get->Step());
  if (!row || s_.horizon_get->IsNull(0)) return std::optional<int64_t>();
  return std::optional<int64_t>(s_.horizon_get->Int64(0));
}

absl::StatusOr<std::unique_ptr<NewsSubscription>> SqliteBackend::Subscribe(
    NewsCallback on_news) {
  // Read after the socket is bound, so that a horizon announced meanwhile
  // arrives as news if it is not the one read here.
  return SubscribeToNews(
      news_folder_, std::move(on_news), [this]() -> std::optional<StoreNews> {
        internal::MutexLock lock(&mu_);
        absl::StatusOr<std::optional<int64_t>> horizon = ReadHorizon();
        if (!horizon.ok() || !horizon->has_value()) {
          return std::nullopt;
        }
        StoreNews news;
        news.kind = StoreNews::Kind::kDue;
        news.at = FromMicros(**horizon);
        return news;
      });
}

absl::StatusOr<int64_t> SqliteBackend::LoadCounter() {
  ScopedReset reset(s_.counter_get.get());
  DQ_ASSIGN_OR_RETURN(bool row, s_.counter_get->Step());
  if (!row) {
    return absl::DataLossError(
        absl::StrCat("sqlite ", conn_->path(), ": counter row is missing"));
  }
  return s_.counter_get->Int64(0);
}

absl::Status SqliteBackend::SaveCounter(int64_t value) {
  ScopedReset reset(s_.counter_set.get());
  s_.counter_set->BindInt64(1, value);
  return s_.counter_set->Run().status();
}

absl::Status SqliteBackend::HoldId(absl::string_view id, int64_t unique_for_us,
                                   int64_t now_us) {
  if (unique_for_us <= 0) return absl::OkStatus();
  ScopedReset reset(s_.hold.get());
  s_.hold->BindText(1, id);
  s_.hold->BindInt64(2, now_us + unique_for_us);
  return s_.hold->Run().status();
}

absl::Status SqliteBackend::CheckNotHeld(absl::string_view id) {
  ScopedReset reset(s_.is_held.get());
  s_.is_held->BindText(1, id);
  DQ_ASSIGN_OR_RETURN(bool row, s_.is_held->Step());
  return row ? internal::IdInUse(id) : absl::OkStatus();
}

absl::StatusOr<bool> SqliteBackend::MoveDue(Statement* stmt, int limit,
                                            int64_t now_us,
                                            std::vector<Transition>* out) {
  struct Due {
    int64_t seq;
    int64_t unique_for_us;
    Transition transition;
  };
  std::vector<Due> due;
  bool more = false;
  {
    // Read first, then write: SQLite does not promise what a running query
    // sees of rows the same connection changes under it.
    ScopedReset reset(stmt);
    while (true) {
      DQ_ASSIGN_OR_RETURN(bool row, stmt->Step());
      if (!row) break;
      if (static_cast<int>(due.size()) == limit) {
        more = true;
        break;
      }
      Due d;
      d.seq = stmt->Int64(0);
      d.transition.id = stmt->Text(1);
      d.transition.topic = stmt->Text(2);
      const int64_t state = stmt->Int64(3);
      d.transition.attempts = static_cast<int>(stmt->Int64(4));
      const int64_t max_attempts = stmt->Int64(5);
      const bool lapses = !stmt->IsNull(6) && stmt->Int64(6) <= now_us;
      d.unique_for_us = stmt->Int64(8);
      if (state == kStateReserved && d.transition.attempts >= max_attempts) {
        d.transition.kind = Transition::Kind::kDead;
      } else if (lapses) {
        d.transition.kind = stmt->Int64(7) != 0 ? Transition::Kind::kDiscarded
                                                : Transition::Kind::kLapsed;
      } else if (state == kStateDelayed) {
        d.transition.kind = Transition::Kind::kPromoted;
      } else {
        d.transition.kind = Transition::Kind::kExpired;
      }
      due.push_back(std::move(d));
    }
  }
  int64_t counter = -1;
  // Settled once the counter is saved: a dependant's death takes the next.
  std::vector<std::pair<std::string, DependencyOutcome>> settle;
  for (Due& d : due) {
    const Transition::Kind kind = d.transition.kind;
    if (kind == Transition::Kind::kDiscarded) {
      settle.emplace_back(d.transition.id, DependencyOutcome::kGone);
    } else if (kind == Transition::Kind::kDead ||
               kind == Transition::Kind::kLapsed) {
      settle.emplace_back(d.transition.id, DependencyOutcome::kFailed);
    }
    if (kind == Transition::Kind::kDiscarded) {
      ScopedReset reset(s_.discard.get());
      s_.discard->BindInt64(1, d.seq);
      DQ_RETURN_IF_ERROR(s_.discard->Run().status());
      DQ_RETURN_IF_ERROR(HoldId(d.transition.id, d.unique_for_us, now_us));
    } else if (kind == Transition::Kind::kDead ||
               kind == Transition::Kind::kLapsed) {
      if (counter < 0) {
        DQ_ASSIGN_OR_RETURN(counter, LoadCounter());
      }
      ScopedReset reset(s_.make_dead.get());
      s_.make_dead->BindInt64(1, d.seq);
      s_.make_dead->BindInt64(2, ++counter);
      s_.make_dead->BindText(3, kind == Transition::Kind::kDead
                                    ? internal::kLeaseExpired
                                    : internal::kJobExpired);
      s_.make_dead->BindInt64(4, now_us);
      DQ_RETURN_IF_ERROR(s_.make_dead->Run().status());
    } else {
      ScopedReset reset(s_.make_ready.get());
      s_.make_ready->BindInt64(1, d.seq);
      DQ_RETURN_IF_ERROR(s_.make_ready->Run().status());
      NoteMadeReady(d.transition.topic);
    }
    NoteCount(d.transition.topic, internal::CountOfMove(kind));
    if (out != nullptr) out->push_back(std::move(d.transition));
  }
  if (counter >= 0) DQ_RETURN_IF_ERROR(SaveCounter(counter));
  for (const auto& [id, outcome] : settle) {
    DQ_RETURN_IF_ERROR(SettleDependants(id, outcome, now_us));
  }
  return more;
}

absl::Status SqliteBackend::Add(absl::Span<const NewJob> jobs, absl::Time now) {
  return WriteTransaction(now, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return InsertJobs(jobs, ToMicros(now));
  });
}

absl::Status SqliteBackend::InsertJobs(absl::Span<const NewJob> jobs,
                                       int64_t now_us) {
  const bool any_waits =
      std::any_of(jobs.begin(), jobs.end(),
                  [](const NewJob& job) { return !job.after.empty(); });
  if (any_waits) DQ_RETURN_IF_ERROR(CheckDependencies(jobs));
  const bool any_batch =
      std::any_of(jobs.begin(), jobs.end(),
                  [](const NewJob& job) { return !job.batch.empty(); });
  if (any_batch) DQ_RETURN_IF_ERROR(CheckBatches(jobs));
  {
    ScopedReset reset(s_.drop_holds.get());
    s_.drop_holds->BindInt64(1, now_us);
    DQ_RETURN_IF_ERROR(s_.drop_holds->Run().status());
  }
  Statement* insert = s_.insert.get();
  for (const NewJob& job : jobs) {
    DQ_RETURN_IF_ERROR(CheckNotHeld(job.id));
    ScopedReset reset(insert);
    const int64_t run_at = ToMicros(job.run_at);
    const bool delayed = run_at > now_us;
    const bool expires = job.expire_at != absl::InfiniteFuture();
    const int64_t expire_at = ToMicros(job.expire_at);
    insert->BindText(1, job.id);
    insert->BindText(2, job.topic);
    insert->BindBlob(3, job.payload);
    insert->BindInt64(4, delayed ? kStateDelayed : kStateReady);
    insert->BindInt64(5, job.priority);
    insert->BindInt64(6, job.max_attempts);
    insert->BindInt64(7, absl::ToInt64Microseconds(job.ttr));
    insert->BindInt64(8, internal::BackoffCode(job.backoff));
    insert->BindInt64(9, absl::ToInt64Microseconds(job.backoff.base));
    insert->BindInt64(10, absl::ToInt64Microseconds(job.backoff.max));
    insert->BindInt64(11, now_us);
    insert->BindInt64(12, run_at);
    // due_us as DQ_WAITING_DUE() has it.
    if (delayed || expires) {
      const int64_t due = delayed
                              ? (expires ? std::min(run_at, expire_at) : run_at)
                              : expire_at;
      insert->BindInt64(13, due);
      NoteDue(due);
    } else {
      insert->BindNull(13);
    }
    if (!delayed) NoteMadeReady(job.topic);
    JobCounts enqueued;
    enqueued.enqueued = 1;
    NoteCount(job.topic, enqueued);
    if (expires) {
      insert->BindInt64(14, expire_at);
    } else {
      insert->BindNull(14);
    }
    insert->BindInt64(15, job.discard_expired ? 1 : 0);
    insert->BindInt64(16, absl::ToInt64Microseconds(job.unique_for));
    const bool keeps = job.keep_for > absl::ZeroDuration();
    insert->BindInt64(17, keeps ? absl::ToInt64Microseconds(job.keep_for) : 0);
    insert->BindInt64(18, keeps ? job.keep_at_most : 0);
    insert->BindInt64(19, static_cast<int64_t>(job.after.size()));
    absl::StatusOr<int> done = insert->Run();
    if (done.status().code() == absl::StatusCode::kAlreadyExists) {
      return internal::IdInUse(job.id);
    }
    DQ_RETURN_IF_ERROR(done.status());
    if (!job.after.empty()) DQ_RETURN_IF_ERROR(AwaitDependencies(job, now_us));
    if (!job.batch.empty()) DQ_RETURN_IF_ERROR(JoinBatch(job));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Lease>> SqliteBackend::Reserve(
    absl::string_view topic, int max, absl::Time now, ReserveReport* report) {
  std::vector<Lease> leases;
  std::vector<Settled>* settled =
      report == nullptr ? nullptr : &report->settled;
  absl::Status status = WriteTransaction(now, settled, [&]() -> absl::Status {
    return ReserveInTransaction(topic, max, ToMicros(now), &leases, report);
  });
  if (!status.ok()) return status;
  return leases;
}

AckReserved SqliteBackend::AckAndReserve(absl::string_view id, uint64_t token,
                                         absl::string_view result,
                                         absl::string_view topic, int max,
                                         absl::Time now,
                                         ReserveReport* report) {
  // Two operations of one group, the ack first: each keeps its own
  // outcome, and the caller waits for one transaction, not two.
  const int64_t now_us = ToMicros(now);
  std::vector<Lease> leases;
  // What each operation settled, kept apart until its outcome is known.
  std::vector<Settled> settled[2];
  const bool want = report != nullptr;
  auto ack = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return RunOp(
        now_us,
        [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return AckInTransaction(id, token, result, now_us);
        },
        want ? &settled[0] : nullptr);
  };
  auto reserve = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return RunOp(
        now_us,
        [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          leases.clear();
          return ReserveInTransaction(topic, max, now_us, &leases, report);
        },
        want ? &settled[1] : nullptr);
  };
  GroupCommit::Op ops[] = {GroupCommit::Op(ack), GroupCommit::Op(reserve)};
  group_.RunAll(absl::MakeSpan(ops));
  for (int i = 0; want && i < 2; ++i) {  // the ack's first
    if (ops[i].result.ok()) {
      internal::AppendSettled(std::move(settled[i]), &report->settled);
    }
  }
  AckReserved out;
  out.acked = std::move(ops[0].result);
  if (ops[1].result.ok()) {
    out.leases = std::move(leases);
  } else {
    out.leases = std::move(ops[1].result);
  }
  return out;
}

absl::Status SqliteBackend::ReserveInTransaction(absl::string_view topic,
                                                 int max, int64_t now_us,
                                                 std::vector<Lease>* leases,
                                                 ReserveReport* report) {
  s_.topic_due->BindText(1, topic);
  s_.topic_due->BindInt64(2, now_us);
  DQ_RETURN_IF_ERROR(MoveDue(s_.topic_due.get(), kReservePromoteLimit, now_us,
                             report != nullptr ? &report->moved : nullptr)
                         .status());
  {
    ScopedReset reset(s_.is_paused.get());
    s_.is_paused->BindText(1, topic);
    DQ_ASSIGN_OR_RETURN(bool paused, s_.is_paused->Step());
    if (paused) return absl::OkStatus();
  }
  return ReserveReady(topic, max, now_us, leases, report);
}

absl::Status SqliteBackend::ReserveReady(absl::string_view topic, int max,
                                         int64_t now_us,
                                         std::vector<Lease>* leases,
                                         ReserveReport* report) {
  std::optional<TopicLimit> limit;
  int64_t tat_us = internal::kFreshBucket;
  {
    ScopedReset reset(s_.limit_get.get());
    s_.limit_get->BindText(1, topic);
    DQ_ASSIGN_OR_RETURN(bool row, s_.limit_get->Step());
    if (row) {
      limit.emplace();
      limit->rate = s_.limit_get->Int64(0);
      limit->period = absl::Microseconds(s_.limit_get->Int64(1));
      limit->burst = s_.limit_get->Int64(2);
      limit->concurrency = s_.limit_get->Int64(3);
      if (!s_.limit_get->IsNull(4)) tat_us = s_.limit_get->Int64(4);
    }
  }
  std::optional<internal::LimitGate> gate;
  int64_t allowed = max;
  if (limit.has_value()) {
    // The reserved jobs matter only to a concurrency cap.
    int64_t reserved = 0;
    if (limit->concurrency > 0) {
      DQ_ASSIGN_OR_RETURN(reserved, CountOf(topic, kStateReserved));
    }
    gate.emplace(*limit, tat_us, now_us, reserved);
    allowed = gate->Allowed(max);
  }
  if (allowed > 0) {
    // Random, not the file's counter: a token one could count to would let
    // a client end another's lease.
    const int64_t first_token =
        static_cast<int64_t>(internal::NewFirstLeaseToken());
    Statement* reserve = s_.reserve_one.get();
    while (static_cast<int64_t>(leases->size()) < allowed) {
      ScopedReset reset(reserve);
      reserve->BindText(1, topic);
      reserve->BindInt64(2, now_us);
      reserve->BindInt64(3, first_token + static_cast<int64_t>(leases->size()));
      reserve->BindText(4, report == nullptr ? "" : report->holder);
      DQ_ASSIGN_OR_RETURN(bool row, reserve->Step());
      if (!row) break;
      Lease lease;
      lease.job = ReadJob(*reserve, &lease.token);
      lease.deadline = lease.job.deadline;
      const int64_t after_count = reserve->Int64(kAfterCountColumn);
      // Finish the statement so its change is complete before the next one.
      DQ_RETURN_IF_ERROR(reserve->Run().status());
      DQ_RETURN_IF_ERROR(
          ReadAfter(after_count, &lease.job, &lease.dependency_results));
      NoteReserved(lease);
      NoteCount(topic,
                internal::CountOfDelivery(ToMicros(lease.job.run_at), now_us));
      leases->push_back(std::move(lease));
    }
  }
  if (!gate.has_value()) return absl::OkStatus();
  const int64_t taken = static_cast<int64_t>(leases->size());
  if (taken > 0) {
    ScopedReset reset(s_.limit_tat.get());
    s_.limit_tat->BindText(1, topic);
    s_.limit_tat->BindInt64(2, gate->TatAfter(taken));
    DQ_RETURN_IF_ERROR(s_.limit_tat->Run().status());
  }
  if (report != nullptr && taken < max) {
    DQ_ASSIGN_OR_RETURN(int64_t ready, CountOf(topic, kStateReady));
    if (ready > 0) {
      const int64_t next = gate->NextAllowed(taken);
      report->limited_until = next == internal::kUntilReleased
                                  ? absl::InfiniteFuture()
                                  : FromMicros(next);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> SqliteBackend::CountOf(absl::string_view topic,
                                               int state) {
  ScopedReset reset(s_.state_count.get());
  s_.state_count->BindText(1, topic);
  s_.state_count->BindInt64(2, state);
  DQ_ASSIGN_OR_RETURN(bool row, s_.state_count->Step());
  return row ? s_.state_count->Int64(0) : 0;
}

absl::Status SqliteBackend::NoteSlotFreed(absl::string_view topic) {
  int64_t cap = 0;
  {
    ScopedReset reset(s_.limit_get.get());
    s_.limit_get->BindText(1, topic);
    DQ_ASSIGN_OR_RETURN(bool row, s_.limit_get->Step());
    if (row) cap = s_.limit_get->Int64(3);
  }
  return NoteSlotFreedUnder(topic, cap);
}

absl::Status SqliteBackend::NoteSlotFreedUnder(absl::string_view topic,
                                               int64_t cap) {
  if (cap <= 0) return absl::OkStatus();
  // Only a cap that was full held workers back.
  DQ_ASSIGN_OR_RETURN(int64_t reserved, CountOf(topic, kStateReserved));
  if (reserved + 1 >= cap) pending_.look_again.push_back(std::string(topic));
  return absl::OkStatus();
}

absl::Status SqliteBackend::SetLimit(absl::string_view topic,
                                     const TopicLimit& limit, absl::Time now) {
  return WriteTransaction(now, [&]() -> absl::Status {
    ScopedReset reset(s_.limit_set.get());
    s_.limit_set->BindText(1, topic);
    s_.limit_set->BindInt64(2, limit.rate);
    s_.limit_set->BindInt64(3, absl::ToInt64Microseconds(limit.period));
    s_.limit_set->BindInt64(4, limit.burst);
    s_.limit_set->BindInt64(5, limit.concurrency);
    DQ_RETURN_IF_ERROR(s_.limit_set->Run().status());
    // A looser limit may let waiting workers in.
    pending_.look_again.push_back(std::string(topic));
    return absl::OkStatus();
  });
}

absl::Status SqliteBackend::ClearLimit(absl::string_view topic,
                                       absl::Time now) {
  return WriteTransaction(now, [&]() -> absl::Status {
    ScopedReset reset(s_.limit_clear.get());
    s_.limit_clear->BindText(1, topic);
    DQ_ASSIGN_OR_RETURN(int changed, s_.limit_clear->Run());
    if (changed > 0) pending_.look_again.push_back(std::string(topic));
    return absl::OkStatus();
  });
}

absl::Status SqliteBackend::Ack(absl::string_view id, uint64_t token,
                                absl::string_view result, absl::Time now,
                                std::vector<Settled>* settled) {
  return WriteTransaction(
      now, settled, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return AckInTransaction(id, token, result, ToMicros(now));
      });
}

absl::StatusOr<std::vector<absl::Status>> SqliteBackend::AckBatch(
    absl::Span<const Lease> leases, absl::Time now,
    std::vector<Settled>* settled) {
  std::vector<absl::Status> out;
  if (leases.empty()) return out;
  out.reserve(leases.size());
  DQ_RETURN_IF_ERROR(WriteTransaction(now, settled, [&]() -> absl::Status {
    for (const Lease& l : leases) {
      absl::Status st =
          AckInTransaction(l.job.id, l.token, /*result=*/"", ToMicros(now));
      if (!st.ok() && !absl::IsFailedPrecondition(st)) return st;
      out.push_back(std::move(st));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::Status SqliteBackend::AckInTransaction(absl::string_view id,
                                             uint64_t token,
                                             absl::string_view result,
                                             int64_t now_us) {
  int64_t unique_for_us;
  std::string topic;
  bool deleted;
  {
    // Most jobs have no keep_for: try the delete first.
    ScopedReset reset(s_.ack.get());
    s_.ack->BindText(1, id);
    s_.ack->BindInt64(2, static_cast<int64_t>(token));
    DQ_ASSIGN_OR_RETURN(deleted, s_.ack->Step());
    if (deleted) {
      unique_for_us = s_.ack->Int64(0);
      topic = s_.ack->Text(1);
      DQ_RETURN_IF_ERROR(s_.ack->Run().status());
    }
  }
  if (deleted) {
    // The topic's done jobs whose time is up leave with an Ack() of it.
    // Its count of done jobs comes with the cap NoteSlotFreed() reads, so
    // that a topic without done jobs pays nothing more for looking.
    int64_t cap = 0, done_jobs = 0;
    {
      ScopedReset reset(s_.acked_topic.get());
      s_.acked_topic->BindText(1, topic);
      DQ_ASSIGN_OR_RETURN(bool row, s_.acked_topic->Step());
      if (row) {
        cap = s_.acked_topic->Int64(0);
        done_jobs = s_.acked_topic->Int64(1);
      }
    }
    if (done_jobs > 0) {
      ScopedReset reset(s_.drop_left_of_topic.get());
      s_.drop_left_of_topic->BindText(1, topic);
      s_.drop_left_of_topic->BindInt64(2, now_us);
      DQ_RETURN_IF_ERROR(s_.drop_left_of_topic->Run().status());
    }
    DQ_RETURN_IF_ERROR(NoteSlotFreedUnder(topic, cap));
  } else {
    bool kept = false;
    DQ_RETURN_IF_ERROR(
        KeepDone(id, token, result, now_us, &kept, &topic, &unique_for_us));
    if (!kept) return internal::StaleLease(id);
    DQ_RETURN_IF_ERROR(NoteSlotFreed(topic));
  }
  JobCounts done;
  done.done = 1;
  NoteCount(topic, done);
  DQ_RETURN_IF_ERROR(SettleDependants(id, DependencyOutcome::kMet, now_us));
  return HoldId(id, unique_for_us, now_us);
}

absl::Status SqliteBackend::KeepDone(absl::string_view id, uint64_t token,
                                     absl::string_view result, int64_t now_us,
                                     bool* kept, std::string* topic,
                                     int64_t* unique_for_us) {
  int64_t keep_at_most;
  {
    ScopedReset reset(s_.keep.get());
    s_.keep->BindText(1, id);
    s_.keep->BindInt64(2, static_cast<int64_t>(token));
    s_.keep->BindBlob(3, result);
    s_.keep->BindInt64(4, now_us);
    DQ_ASSIGN_OR_RETURN(*kept, s_.keep->Step());
    if (!*kept) return absl::OkStatus();
    *unique_for_us = s_.keep->Int64(0);
    *topic = s_.keep->Text(1);
    keep_at_most = s_.keep->Int64(2);
    DQ_RETURN_IF_ERROR(s_.keep->Run().status());
  }
  {
    ScopedReset reset(s_.counter_bump.get());
    DQ_RETURN_IF_ERROR(s_.counter_bump->Run().status());
  }
  {
    // The kept job leaves after now: it stays.
    ScopedReset reset(s_.drop_left_of_topic.get());
    s_.drop_left_of_topic->BindText(1, *topic);
    s_.drop_left_of_topic->BindInt64(2, now_us);
    DQ_RETURN_IF_ERROR(s_.drop_left_of_topic->Run().status());
  }
  DQ_ASSIGN_OR_RETURN(int64_t done_jobs, CountOf(*topic, kStateDone));
  if (done_jobs <= keep_at_most) return absl::OkStatus();
  ScopedReset reset(s_.drop_soonest.get());
  s_.drop_soonest->BindText(1, *topic);
  s_.drop_soonest->BindInt64(2, done_jobs - keep_at_most);
  return s_.drop_soonest->Run().status();
}

absl::StatusOr<FailOutcome> SqliteBackend::Fail(
    absl::string_view id, uint64_t token, absl::string_view error,
    absl::Time retry_at, absl::Time now, std::vector<Settled>* settled) {
  FailOutcome outcome = FailOutcome::kRetry;
  absl::Status status = WriteTransaction(now, settled, [&]() -> absl::Status {
    int64_t seq, attempts, max_attempts;
    std::string topic;
    {
      ScopedReset reset(s_.lease.get());
      s_.lease->BindText(1, id);
      s_.lease->BindInt64(2, static_cast<int64_t>(token));
      DQ_ASSIGN_OR_RETURN(bool row, s_.lease->Step());
      if (!row) return internal::StaleLease(id);
      seq = s_.lease->Int64(0);
      attempts = s_.lease->Int64(1);
      max_attempts = s_.lease->Int64(2);
      topic = s_.lease->Text(3);
    }
    outcome =
        attempts >= max_attempts ? FailOutcome::kDead : FailOutcome::kRetry;
    NoteCount(topic, internal::CountOfFail(outcome));
    if (outcome == FailOutcome::kDead) {
      DQ_ASSIGN_OR_RETURN(int64_t counter, LoadCounter());
      {
        // Reset before the dependants' deaths use the statement again.
        ScopedReset reset(s_.make_dead.get());
        s_.make_dead->BindInt64(1, seq);
        s_.make_dead->BindInt64(2, counter + 1);
        s_.make_dead->BindText(3, error);
        s_.make_dead->BindInt64(4, ToMicros(now));
        DQ_RETURN_IF_ERROR(s_.make_dead->Run().status());
      }
      DQ_RETURN_IF_ERROR(NoteSlotFreed(topic));
      DQ_RETURN_IF_ERROR(SaveCounter(counter + 1));
      return SettleDependants(id, DependencyOutcome::kFailed, ToMicros(now));
    }
    const bool ready = retry_at <= now;
    const int64_t retry_us = ToMicros(retry_at);
    ScopedReset reset(s_.retry.get());
    s_.retry->BindInt64(1, seq);
    s_.retry->BindInt64(2, ready ? kStateReady : kStateDelayed);
    s_.retry->BindInt64(3, retry_us);
    if (ready) {
      NoteMadeReady(topic);
    } else {
      NoteDue(retry_us);
    }
    s_.retry->BindText(4, error);
    DQ_RETURN_IF_ERROR(s_.retry->Run().status());
    return NoteSlotFreed(topic);
  });
  if (!status.ok()) return status;
  return outcome;
}

absl::Status SqliteBackend::Release(absl::string_view id, uint64_t token,
                                    absl::Time run_at, absl::Time now) {
  return WriteTransaction(now, [&]() -> absl::Status {
    const bool ready = run_at <= now;
    const int64_t run_us = ToMicros(run_at);
    ScopedReset reset(s_.release.get());
    s_.release->BindText(1, id);
    s_.release->BindInt64(2, static_cast<int64_t>(token));
    s_.release->BindInt64(3, ready ? kStateReady : kStateDelayed);
    s_.release->BindInt64(4, run_us);
    DQ_ASSIGN_OR_RETURN(bool row, s_.release->Step());
    if (!row) return internal::StaleLease(id);
    DQ_RETURN_IF_ERROR(NoteSlotFreed(s_.release->Text(0)));
    if (ready) {
      NoteMadeReady(s_.release->Text(0));
    } else {
      NoteDue(run_us);
    }
    return s_.release->Run().status();
  });
}

absl::StatusOr<absl::Time> SqliteBackend::Touch(absl::string_view id,
                                                uint64_t token,
                                                absl::Time now) {
  absl::Time deadline;
  absl::Status status = WriteTransaction(now, [&]() -> absl::Status {
    ScopedReset reset(s_.touch.get());
    s_.touch->BindText(1, id);
    s_.touch->BindInt64(2, static_cast<int64_t>(token));
    s_.touch->BindInt64(3, ToMicros(now));
    DQ_ASSIGN_OR_RETURN(bool row, s_.touch->Step());
    if (!row) return internal::StaleLease(id);
    deadline = FromMicros(s_.touch->Int64(0));
    NoteDue(s_.touch->Int64(0));
    return s_.touch->Run().status();
  });
  if (!status.ok()) return status;
  return deadline;
}

absl::Status SqliteBackend::Cancel(absl::string_view id, absl::Time now,
                                   std::vector<Settled>* settled) {
  return WriteTransaction(now, settled, [&]() -> absl::Status {
    int64_t unique_for_us, state;
    std::string topic;
    {
      // Reset before the dependants' departures use the statement again.
      ScopedReset reset(s_.cancel.get());
      s_.cancel->BindText(1, id);
      DQ_ASSIGN_OR_RETURN(bool row, s_.cancel->Step());
      if (!row) return internal::NoSuchJob(id);
      unique_for_us = s_.cancel->Int64(0);
      topic = s_.cancel->Text(1);
      state = s_.cancel->Int64(2);
      DQ_RETURN_IF_ERROR(s_.cancel->Run().status());
    }
    const bool reserved = state == kStateReserved;
    const bool waiting = state == kStateWaiting;
    if (reserved) DQ_RETURN_IF_ERROR(NoteSlotFreed(topic));
    if (waiting) {
      ScopedReset reset(s_.forget_waiter.get());
      s_.forget_waiter->BindText(1, id);
      DQ_RETURN_IF_ERROR(s_.forget_waiter->Run().status());
    }
    DQ_RETURN_IF_ERROR(
        SettleDependants(id, DependencyOutcome::kGone, ToMicros(now)));
    return HoldId(id, unique_for_us, ToMicros(now));
  });
}

absl::Status SqliteBackend::PromoteJob(absl::string_view id, absl::Time now) {
  return WriteTransaction(now, [&]() -> absl::Status {
    int64_t seq, state;
    {
      ScopedReset reset(s_.state_of.get());
      s_.state_of->BindText(1, id);
      DQ_ASSIGN_OR_RETURN(bool row, s_.state_of->Step());
      if (!row) return internal::NoSuchJob(id);
      seq = s_.state_of->Int64(0);
      state = s_.state_of->Int64(1);
    }
    if (state != kStateDelayed) {
      return internal::NotDelayed(id, JobStateName(StateFromInt(state)));
    }
    {
      ScopedReset reset(s_.topic_of.get());
      s_.topic_of->BindInt64(1, seq);
      DQ_ASSIGN_OR_RETURN(bool row, s_.topic_of->Step());
      if (row) NoteMadeReady(s_.topic_of->Text(0));
    }
    ScopedReset reset(s_.promote_job.get());
    s_.promote_job->BindInt64(1, seq);
    s_.promote_job->BindInt64(2, ToMicros(now));
    return s_.promote_job->Run().status();
  });
}

absl::StatusOr<int> SqliteBackend::PurgeDead(absl::string_view topic, int max,
                                             absl::Time now,
                                             std::vector<Settled>* settled) {
  int purged = 0;
  DQ_RETURN_IF_ERROR(WriteTransaction(now, settled, [&]() -> absl::Status {
    std::vector<std::string> ids;
    {
      ScopedReset reset(s_.dead_ids.get());
      s_.dead_ids->BindText(1, topic);
      s_.dead_ids->BindInt64(2, std::max(max, 1));
      while (true) {
        DQ_ASSIGN_OR_RETURN(bool row, s_.dead_ids->Step());
        if (!row) break;
        ids.push_back(s_.dead_ids->Text(0));
      }
    }
    for (const std::string& id : ids) {
      int64_t unique_for_us;
      {
        ScopedReset reset(s_.cancel.get());
        s_.cancel->BindText(1, id);
        DQ_ASSIGN_OR_RETURN(bool row, s_.cancel->Step());
        if (!row) continue;
        unique_for_us = s_.cancel->Int64(0);
        DQ_RETURN_IF_ERROR(s_.cancel->Run().status());
      }
      DQ_RETURN_IF_ERROR(HoldId(id, unique_for_us, ToMicros(now)));
      DQ_RETURN_IF_ERROR(
          SettleDependants(id, DependencyOutcome::kGone, ToMicros(now)));
    }
    purged = static_cast<int>(ids.size());
    return absl::OkStatus();
  }));
  return purged;
}

absl::Status SqliteBackend::SetPaused(absl::string_view topic, bool paused,
                                      absl::Time now) {
  return WriteTransaction(now, [&]() -> absl::Status {
    Statement* change = paused ? s_.pause.get() : s_.resume.get();
    ScopedReset reset(change);
    change->BindText(1, topic);
    DQ_ASSIGN_OR_RETURN(int changed, change->Run());
    if (!paused && changed > 0) {
      pending_.look_again.push_back(std::string(topic));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<int> SqliteBackend::Kick(absl::string_view topic, int max,
                                        absl::Time now) {
  DQ_ASSIGN_OR_RETURN(std::vector<std::string> ids, KickIds(topic, max, now));
  return static_cast<int>(ids.size());
}

absl::StatusOr<std::vector<std::string>> SqliteBackend::KickIds(
    absl::string_view topic, int max, absl::Time now) {
  std::vector<std::string> ids;
  if (max <= 0) return ids;
  absl::Status status = WriteTransaction(now, [&]() -> absl::Status {
    ids.clear();
    std::vector<int64_t> seqs;
    {
      ScopedReset reset(s_.dead_of_topic.get());
      s_.dead_of_topic->BindText(1, topic);
      s_.dead_of_topic->BindInt64(2, max);
      while (true) {
        DQ_ASSIGN_OR_RETURN(bool row, s_.dead_of_topic->Step());
        if (!row) break;
        seqs.push_back(s_.dead_of_topic->Int64(0));
        ids.push_back(s_.dead_of_topic->Text(1));
      }
    }
    for (int64_t seq : seqs) {
      ScopedReset reset(s_.kick.get());
      s_.kick->BindInt64(1, seq);
      s_.kick->BindInt64(2, ToMicros(now));
      DQ_RETURN_IF_ERROR(s_.kick->Run().status());
    }
    if (!seqs.empty()) NoteMadeReady(topic, static_cast<int>(seqs.size()));
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return ids;
}

absl::Status SqliteBackend::KickJob(absl::string_view id, absl::Time now) {
  return WriteTransaction(now, [&]() -> absl::Status {
    int64_t seq, state;
    {
      ScopedReset reset(s_.state_of.get());
      s_.state_of->BindText(1, id);
      DQ_ASSIGN_OR_RETURN(bool row, s_.state_of->Step());
      if (!row) return internal::NoSuchJob(id);
      seq = s_.state_of->Int64(0);
      state = s_.state_of->Int64(1);
    }
    if (state != kStateDead) {
      return internal::NotDead(id, JobStateName(StateFromInt(state)));
    }
    {
      ScopedReset reset(s_.topic_of.get());
      s_.topic_of->BindInt64(1, seq);
      DQ_ASSIGN_OR_RETURN(bool row, s_.topic_of->Step());
      if (row) NoteMadeReady(s_.topic_of->Text(0));
    }
    ScopedReset reset(s_.kick.get());
    s_.kick->BindInt64(1, seq);
    s_.kick->BindInt64(2, ToMicros(now));
    return s_.kick->Run().status();
  });
}

absl::Status SqliteBackend::Replace(const NewJob& job, absl::Time now) {
  return WriteTransaction(now, [&]() -> absl::Status {
    int64_t seq, state;
    {
      ScopedReset reset(s_.state_of.get());
      s_.state_of->BindText(1, job.id);
      DQ_ASSIGN_OR_RETURN(bool row, s_.state_of->Step());
      if (!row) return internal::NoSuchJob(job.id);
      seq = s_.state_of->Int64(0);
      state = s_.state_of->Int64(1);
    }
    if (state != kStateDelayed && state != kStateReady) {
      return internal::NotReplaceable(job.id,
                                      JobStateName(StateFromInt(state)));
    }
    {
      ScopedReset reset(s_.topic_of.get());
      s_.topic_of->BindInt64(1, seq);
      DQ_ASSIGN_OR_RETURN(bool row, s_.topic_of->Step());
      const std::string topic = row ? s_.topic_of->Text(0) : "";
      if (topic != job.topic) return internal::OtherTopic(job.id, topic);
    }
    const int64_t run_at = ToMicros(job.run_at);
    const bool ready = job.run_at <= now;
    if (ready && state != kStateReady) NoteMadeReady(job.topic);
    if (!ready) NoteDue(run_at);
    ScopedReset reset(s_.replace.get());
    s_.replace->BindInt64(1, seq);
    s_.replace->BindBlob(2, job.payload);
    s_.replace->BindInt64(3, run_at);
    s_.replace->BindInt64(4, ready ? kStateReady : kStateDelayed);
    return s_.replace->Run().status();
  });
}

absl::StatusOr<PromoteResult> SqliteBackend::PromoteDue(absl::Time now,
                                                        int limit) {
  PromoteResult result;
  if (limit < 1) limit = 1;
  {
    // Most looks find nothing (busy workers' reservations promote their own
    // topic first): a read, not a write transaction and a place in a group.
    internal::MutexLock lock(&mu_);
    ScopedReset reset(s_.anything_due.get());
    s_.anything_due->BindInt64(1, ToMicros(now));
    DQ_ASSIGN_OR_RETURN(bool row, s_.anything_due->Step());
    if (row && s_.anything_due->Int64(0) == 0) return result;
  }
  std::vector<Settled> settled;
  absl::Status status = WriteTransaction(now, &settled, [&]() -> absl::Status {
    {
      // Done jobs whose time is up leave first.
      ScopedReset reset(s_.drop_left.get());
      s_.drop_left->BindInt64(1, ToMicros(now));
      DQ_RETURN_IF_ERROR(s_.drop_left->Run().status());
    }
    // One row more than `limit` tells whether more remain.
    s_.all_due->BindInt64(1, ToMicros(now));
    s_.all_due->BindInt64(2, static_cast<int64_t>(limit) + 1);
    DQ_ASSIGN_OR_RETURN(
        result.more,
        MoveDue(s_.all_due.get(), limit, ToMicros(now), &result.transitions));
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  result.settled = std::move(settled);
  return result;
}

void SqliteBackend::SetCommitHookForTest(int (*hook)(void*), void* arg) {
  internal::MutexLock lock(&mu_);
  sqlite3_commit_hook(conn_->db(), hook, arg);
}

Checkpointer::Counts CheckpointCountsForTest(Backend* backend) {
  return dynamic_cast<SqliteBackend&>(*backend).checkpointer_->CountsForTest();
}

GroupCommit::State GroupCommitStateForTest(Backend* backend) {
  return dynamic_cast<SqliteBackend&>(*backend).GroupStateForTest();
}

void SetCommitHookForTest(Backend* backend, int (*hook)(void*), void* arg) {
  dynamic_cast<SqliteBackend&>(*backend).SetCommitHookForTest(hook, arg);
}

}  // namespace sqlite_internal

absl::StatusOr<std::unique_ptr<Backend>> OpenSqliteBackend(
    const SqliteOptions& options) {
  return sqlite_internal::SqliteBackend::Open(options);
}

}  // namespace delayq
