// Copyright delayq authors.
//
// The PostgreSQL Backend's reads, each one statement (its own snapshot),
// and Subscribe().

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "backends/postgres/internal/backend_impl.h"
#include "backends/postgres/internal/news.h"
#include "backends/postgres/internal/schema.h"
#include "backends/postgres/internal/statements.h"
#include "src/common/backoff_code.h"
#include "src/common/contract_errors.h"
#include "src/common/list_cursor.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace postgres_internal {

Job ReadJob(const Result& r, int row, uint64_t* token) {
  Job job;
  job.id = r.Text(row, 1);
  job.topic = r.Text(row, 2);
  job.payload = r.Bytes(row, 3);
  job.state = StateFromInt(r.Int(row, 4));
  job.priority = static_cast<int>(r.Int(row, 5));
  job.attempts = static_cast<int>(r.Int(row, 6));
  job.max_attempts = static_cast<int>(r.Int(row, 7));
  job.ttr = absl::Microseconds(r.Int(row, 8));
  job.backoff = internal::BackoffFromCode(r.Int(row, 9),
                                          absl::Microseconds(r.Int(row, 10)),
                                          absl::Microseconds(r.Int(row, 11)));
  job.enqueued_at = FromMicros(r.Int(row, 12));
  job.run_at = FromMicros(r.Int(row, 13));
  job.deadline = job.state == JobState::kReserved && !r.IsNull(row, 14)
                     ? FromMicros(r.Int(row, 14))
                     : absl::InfinitePast();
  job.last_error = r.Text(row, 16);
  if (!r.IsNull(row, 17)) {
    job.expire_at = FromMicros(r.Int(row, 17));
    job.discard_expired = r.Int(row, 18) != 0;
  }
  job.unique_for = absl::Microseconds(r.Int(row, 19));
  if (!r.IsNull(row, 20)) job.result = r.Bytes(row, 20);
  if (IsFinished(job.state) && !r.IsNull(row, 21)) {
    job.finished_at = FromMicros(r.Int(row, 21));
  }
  job.keep_for = absl::Microseconds(r.Int(row, 22));
  job.keep_at_most = static_cast<int>(r.Int(row, 23));
  // Kept after the lease ends (nothing clears them), shown while it lasts.
  if (job.state == JobState::kReserved && !r.IsNull(row, 25)) {
    job.holder = r.Text(row, 24);
    job.reserved_at = FromMicros(r.Int(row, 25));
  }
  if (token != nullptr) *token = static_cast<uint64_t>(r.Int(row, 15));
  return job;
}

bool HasAfter(const Result& r, int row) {
  return r.Int(row, kAfterCountColumn) > 0;
}

absl::StatusOr<Job> PostgresBackend::Get(absl::string_view id) {
  Job job;
  DQ_RETURN_IF_ERROR(Read([&](Connection& conn) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result r, conn.Exec(S(Sql::kGet), Params().Text(id)));
    if (r.rows() == 0) return internal::NoSuchJob(id);
    job = ReadJob(r, 0);
    if (!HasAfter(r, 0)) return absl::OkStatus();
    const AfterOf of{&job, nullptr};
    return ReadAfter(conn, schema_, {&of, 1});
  }));
  return job;
}

absl::StatusOr<std::vector<Job>> PostgresBackend::List(absl::string_view topic,
                                                       JobState state,
                                                       int limit) {
  if (limit <= 0) return std::vector<Job>();
  DQ_ASSIGN_OR_RETURN(JobPage page, ListPage(topic, state, limit, ""));
  return std::move(page.jobs);
}

// Where a list statement reads the position of its row (after the job's
// columns).
constexpr int kPositionColumn = kJobColumnCount;

absl::StatusOr<JobPage> PostgresBackend::ListPage(absl::string_view topic,
                                                  JobState state, int limit,
                                                  absl::string_view cursor) {
  const size_t size = internal::KeysetSize(state);
  // Before every position: the smallest integers (a NULL would compare
  // neither way).
  std::vector<int64_t> after(size, std::numeric_limits<int64_t>::min());
  if (!cursor.empty()) {
    DQ_ASSIGN_OR_RETURN(after, internal::DecodeIntCursor(cursor, state, size));
  }
  JobPage page;
  if (limit <= 0) return page;
  const char* sql = Sql::kListTimed;
  switch (state) {
    case JobState::kReady:
      sql = Sql::kListReady;
      break;
    case JobState::kDead:
      sql = Sql::kListDead;
      break;
    case JobState::kDone:
      sql = Sql::kListDone;
      break;
    case JobState::kWaiting:
      sql = Sql::kListWaiting;
      break;
    case JobState::kDelayed:
    case JobState::kReserved:
      break;
  }
  // One row more than the page shows whether another page follows.
  Params params;
  params.Text(topic).Int(static_cast<int64_t>(limit) + 1);
  if (sql == Sql::kListTimed) params.Int(StateToInt(state));
  for (int64_t v : after) params.Int(v);
  DQ_RETURN_IF_ERROR(Read([&](Connection& conn) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result r, conn.Exec(S(sql), params));
    page = JobPage();
    const int rows = std::min(r.rows(), limit);
    std::vector<AfterOf> waits;
    page.jobs.reserve(rows);
    for (int i = 0; i < rows; ++i) {
      page.jobs.push_back(ReadJob(r, i));
      if (HasAfter(r, i)) waits.push_back({&page.jobs.back(), nullptr});
    }
    DQ_RETURN_IF_ERROR(ReadAfter(conn, schema_, waits));
    if (r.rows() > limit) {
      std::vector<int64_t> last;
      for (size_t k = 0; k < size; ++k) {
        last.push_back(r.Int(limit - 1, kPositionColumn + static_cast<int>(k)));
      }
      page.next_cursor = internal::EncodeIntCursor(state, last);
    }
    return absl::OkStatus();
  }));
  return page;
}

absl::StatusOr<TopicStats> PostgresBackend::Stats(absl::string_view topic) {
  TopicStats stats;
  DQ_RETURN_IF_ERROR(Read([&](Connection& conn) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result r,
                        conn.Exec(S(Sql::kStats), Params().Text(topic)));
    stats = TopicStats();
    for (int i = 0; i < r.rows(); ++i) {
      const int64_t n = r.Int(i, 1);
      switch (StateFromInt(r.Int(i, 0))) {
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
    return absl::OkStatus();
  }));
  return stats;
}

namespace {

// The first column of every row, as text.
std::vector<std::string> FirstColumn(const Result& r) {
  std::vector<std::string> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(r.Text(i, 0));
  return out;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> PostgresBackend::Topics() {
  std::vector<std::string> topics;
  DQ_RETURN_IF_ERROR(Read([&](Connection& conn) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result r, conn.Exec(S(Sql::kTopics)));
    topics = FirstColumn(r);
    return absl::OkStatus();
  }));
  return topics;
}

absl::StatusOr<std::vector<std::string>> PostgresBackend::PausedTopics() {
  std::vector<std::string> topics;
  DQ_RETURN_IF_ERROR(Read([&](Connection& conn) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result r, conn.Exec(S(Sql::kPausedTopics)));
    topics = FirstColumn(r);
    return absl::OkStatus();
  }));
  return topics;
}

absl::StatusOr<std::vector<LimitedTopic>> PostgresBackend::Limits() {
  std::vector<LimitedTopic> out;
  DQ_RETURN_IF_ERROR(Read([&](Connection& conn) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result r, conn.Exec(S(Sql::kLimits)));
    out.clear();
    for (int i = 0; i < r.rows(); ++i) {
      LimitedTopic t;
      t.topic = r.Text(i, 0);
      t.limit.rate = r.Int(i, 1);
      t.limit.period = absl::Microseconds(r.Int(i, 2));
      t.limit.burst = r.Int(i, 3);
      t.limit.concurrency = r.Int(i, 4);
      out.push_back(std::move(t));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<absl::Time> PostgresBackend::NextDue() {
  absl::Time next = absl::InfiniteFuture();
  DQ_RETURN_IF_ERROR(Read([&](Connection& conn) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result r, conn.Exec(S(Sql::kNextDue)));
    next = r.rows() == 0 ? absl::InfiniteFuture() : FromMicros(r.Int(0, 0));
    return absl::OkStatus();
  }));
  return next;
}

absl::StatusOr<std::unique_ptr<NewsSubscription>> PostgresBackend::Subscribe(
    NewsCallback on_news) {
  return SubscribeToNews(
      pool_.get(), NewsChannel(schema_), std::move(on_news),
      [this]() -> std::optional<StoreNews> {
        std::optional<int64_t> horizon;
        absl::Status read = Read([&](Connection& conn) -> absl::Status {
          DQ_ASSIGN_OR_RETURN(Result r, conn.Exec(S(Sql::kHorizonGet)));
          if (r.rows() == 1 && !r.IsNull(0, 0)) horizon = r.Int(0, 0);
          return absl::OkStatus();
        });
        if (!read.ok() || !horizon.has_value()) return std::nullopt;
        StoreNews news;
        news.kind = StoreNews::Kind::kDue;
        news.at = FromMicros(*horizon);
        return news;
      });
}

}  // namespace postgres_internal
}  // namespace delayq
