// Copyright delayq authors.
//
// The SQLite Backend's reads: single statements, each its own snapshot.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/sqlite/internal/backend_impl.h"
#include "backends/sqlite/internal/schema.h"
#include "backends/sqlite/internal/statements.h"
#include "src/common/backoff_code.h"
#include "src/common/contract_errors.h"
#include "src/common/list_cursor.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace sqlite_internal {

Job ReadJob(const Statement& s, uint64_t* token) {
  Job job;
  job.id = s.Text(1);
  job.topic = s.Text(2);
  job.payload = s.Text(3);
  job.state = StateFromInt(s.Int64(4));
  job.priority = static_cast<int>(s.Int64(5));
  job.attempts = static_cast<int>(s.Int64(6));
  job.max_attempts = static_cast<int>(s.Int64(7));
  job.ttr = absl::Microseconds(s.Int64(8));
  job.backoff =
      internal::BackoffFromCode(s.Int64(9), absl::Microseconds(s.Int64(10)),
                                absl::Microseconds(s.Int64(11)));
  job.enqueued_at = FromMicros(s.Int64(12));
  job.run_at = FromMicros(s.Int64(13));
  job.deadline = job.state == JobState::kReserved && !s.IsNull(14)
                     ? FromMicros(s.Int64(14))
                     : absl::InfinitePast();
  job.last_error = s.Text(16);
  if (!s.IsNull(17)) {
    job.expire_at = FromMicros(s.Int64(17));
    job.discard_expired = s.Int64(18) != 0;
  }
  job.unique_for = absl::Microseconds(s.Int64(19));
  job.result = s.Text(20);
  if (IsFinished(job.state) && !s.IsNull(21)) {
    job.finished_at = FromMicros(s.Int64(21));
  }
  job.keep_for = absl::Microseconds(s.Int64(22));
  job.keep_at_most = static_cast<int>(s.Int64(23));
  // Kept after the lease ends (nothing clears them), shown while it lasts.
  if (job.state == JobState::kReserved && !s.IsNull(25)) {
    job.holder = s.Text(24);
    job.reserved_at = FromMicros(s.Int64(25));
  }
  if (token != nullptr) *token = static_cast<uint64_t>(s.Int64(15));
  return job;
}

absl::StatusOr<Job> SqliteBackend::Get(absl::string_view id) {
  internal::MutexLock lock(&mu_);
  ScopedReset reset(s_.get.get());
  s_.get->BindText(1, id);
  DQ_ASSIGN_OR_RETURN(bool row, s_.get->Step());
  if (!row) return internal::NoSuchJob(id);
  Job job = ReadJob(*s_.get);
  DQ_RETURN_IF_ERROR(ReadAfter(s_.get->Int64(kAfterCountColumn), &job));
  return job;
}

absl::StatusOr<std::vector<Job>> SqliteBackend::List(absl::string_view topic,
                                                     JobState state,
                                                     int limit) {
  if (limit <= 0) return std::vector<Job>();
  DQ_ASSIGN_OR_RETURN(JobPage page, ListPage(topic, state, limit, ""));
  return std::move(page.jobs);
}

namespace {

// Where a list statement reads the position of its row (after the job's
// columns).

constexpr int kPositionColumn = kJobColumnCount;

}  // namespace

absl::StatusOr<JobPage> SqliteBackend::ListPage(absl::string_view topic,
                                                JobState state, int limit,
                                                absl::string_view cursor) {
  const size_t size = internal::KeysetSize(state);
  // Before every position: the smallest integers (a NULL would compare
  // neither way).
  std::vector<int64_t> after(size, std::numeric_limits<int64_t>::min());
  if (!cursor.empty()) {
    DQ_ASSIGN_OR_RETURN(after, internal::DecodeIntCursor(cursor, state, size));
  }
  internal::MutexLock lock(&mu_);
  JobPage page;
  if (limit <= 0) return page;
  Statement* stmt = nullptr;  // every state sets it; g++ -O2 cannot tell
  int first_after = 3;
  switch (state) {
    case JobState::kReady:
      stmt = s_.list_ready.get();
      break;
    case JobState::kDead:
      stmt = s_.list_dead.get();
      break;
    case JobState::kDone:
      stmt = s_.list_done.get();
      break;
    case JobState::kWaiting:
      stmt = s_.list_waiting.get();
      break;
    case JobState::kDelayed:
    case JobState::kReserved:
      stmt = s_.list_timed.get();
      stmt->BindInt64(3, StateToInt(state));
      first_after = 4;
      break;
  }
  ScopedReset reset(stmt);
  stmt->BindText(1, topic);
  // One row more than the page shows whether another page follows.
  stmt->BindInt64(2, static_cast<int64_t>(limit) + 1);
  for (size_t i = 0; i < size; ++i) {
    stmt->BindInt64(first_after + static_cast<int>(i), after[i]);
  }
  std::vector<int64_t> last;
  while (true) {
    DQ_ASSIGN_OR_RETURN(bool row, stmt->Step());
    if (!row) break;
    if (page.jobs.size() == static_cast<size_t>(limit)) {
      page.next_cursor = internal::EncodeIntCursor(state, last);
      break;
    }
    page.jobs.push_back(ReadJob(*stmt));
    DQ_RETURN_IF_ERROR(
        ReadAfter(stmt->Int64(kAfterCountColumn), &page.jobs.back()));
    last.clear();
    for (size_t i = 0; i < size; ++i) {
      last.push_back(stmt->Int64(kPositionColumn + static_cast<int>(i)));
    }
  }
  return page;
}

absl::StatusOr<TopicStats> SqliteBackend::Stats(absl::string_view topic) {
  internal::MutexLock lock(&mu_);
  TopicStats stats;
  ScopedReset reset(s_.stats.get());
  s_.stats->BindText(1, topic);
  while (true) {
    DQ_ASSIGN_OR_RETURN(bool row, s_.stats->Step());
    if (!row) break;
    const int64_t n = s_.stats->Int64(1);
    switch (StateFromInt(s_.stats->Int64(0))) {
      case JobState::kDelayed:
        stats.delayed = n;
        break;
      case JobState::kReady:
        stats.ready = n;
        break;
      case JobState::kReserved:
        stats.reserved = n;
        break;
      case JobState::kDead:
        stats.dead = n;
        break;
      case JobState::kDone:
        stats.done = n;
        break;
      case JobState::kWaiting:
        stats.waiting = n;
        break;
    }
  }
  return stats;
}

absl::StatusOr<std::vector<std::string>> SqliteBackend::Topics() {
  internal::MutexLock lock(&mu_);
  std::vector<std::string> topics;
  ScopedReset reset(s_.topics.get());
  while (true) {
    DQ_ASSIGN_OR_RETURN(bool row, s_.topics->Step());
    if (!row) break;
    topics.push_back(s_.topics->Text(0));
  }
  return topics;
}

absl::StatusOr<std::vector<std::string>> SqliteBackend::PausedTopics() {
  internal::MutexLock lock(&mu_);
  std::vector<std::string> topics;
  ScopedReset reset(s_.paused_topics.get());
  while (true) {
    DQ_ASSIGN_OR_RETURN(bool row, s_.paused_topics->Step());
    if (!row) break;
    topics.push_back(s_.paused_topics->Text(0));
  }
  return topics;
}

absl::StatusOr<std::vector<LimitedTopic>> SqliteBackend::Limits() {
  internal::MutexLock lock(&mu_);
  std::vector<LimitedTopic> out;
  ScopedReset reset(s_.limits.get());
  while (true) {
    DQ_ASSIGN_OR_RETURN(bool row, s_.limits->Step());
    if (!row) break;
    LimitedTopic t;
    t.topic = s_.limits->Text(0);
    t.limit.rate = s_.limits->Int64(1);
    t.limit.period = absl::Microseconds(s_.limits->Int64(2));
    t.limit.burst = s_.limits->Int64(3);
    t.limit.concurrency = s_.limits->Int64(4);
    out.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<absl::Time> SqliteBackend::NextDue() {
  internal::MutexLock lock(&mu_);
  ScopedReset reset(s_.next_due.get());
  DQ_ASSIGN_OR_RETURN(bool row, s_.next_due->Step());
  if (!row) return absl::InfiniteFuture();
  return FromMicros(s_.next_due->Int64(0));
}

}  // namespace sqlite_internal
}  // namespace delayq
