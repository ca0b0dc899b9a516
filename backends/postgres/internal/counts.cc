// Copyright delayq authors.
//
// The PostgreSQL store's counts (delayq/counts.h): noted per topic while a
// write transaction runs, appended by it before its commit, folded once a
// minute (schema.cc), read by Counts() and CountTotals().

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/postgres/internal/backend_impl.h"
#include "backends/postgres/internal/statements.h"
#include "src/common/status_macros.h"
#include "src/common/transition_counts.h"

namespace delayq {
namespace postgres_internal {
namespace {

// Decodes DQ_PG_COUNT_COLUMNS from column `first` on.
JobCounts ReadCounts(const Result& r, int row, int first) {
  JobCounts c;
  int64_t* fields[] = {&c.enqueued, &c.done, &c.failed, &c.retried,
                       &c.expired,  &c.dead, &c.lapsed};
  int col = first;
  for (int64_t* f : fields) *f = r.Int(row, col++);
  for (int64_t& n : c.lateness) n = r.Int(row, col++);
  return c;
}

}  // namespace

void PostgresBackend::NoteCount(Tx& tx, absl::string_view topic,
                                const JobCounts& delta) const {
  if (!counts_options_.enabled) return;
  tx.counts[{internal::MinuteMicrosOf(tx.now_us), std::string(topic)}] += delta;
}

absl::StatusOr<std::vector<std::string>> PostgresBackend::CountsStatements(
    Tx& tx) {
  // Once a minute per process: the recent rows of the minutes before this
  // one are folded, and what has passed goes.
  const int64_t minute = internal::MinuteMicrosOf(tx.now_us);
  int64_t folded = folded_at_minute_us_.load();
  if (minute > folded &&
      folded_at_minute_us_.compare_exchange_strong(folded, minute)) {
    DQ_RETURN_IF_ERROR(tx.conn->Run(S(Sql::kCountsFold), Params().Int(minute)));
    DQ_RETURN_IF_ERROR(tx.conn->Run(
        S(Sql::kCountsPrune),
        Params().Int(minute -
                     absl::ToInt64Microseconds(counts_options_.window) +
                     absl::ToInt64Microseconds(absl::Minutes(1)))));
    DQ_RETURN_IF_ERROR(
        tx.conn->Run(S(Sql::kDropHolds), Params().Int(tx.now_us)));
  }
  if (tx.counts.empty()) return std::vector<std::string>();
  std::string statement =
      absl::StrCat("INSERT INTO ", S("{s}.transitions_recent"),
                   " (minute_us, topic, " DQ_PG_COUNT_COLUMNS ") VALUES ");
  bool first = true;
  for (const auto& [key, c] : tx.counts) {
    absl::StrAppend(&statement, first ? "" : ", ", "(", key.first, ", ",
                    tx.conn->Literal(key.second), ", ", c.enqueued, ", ",
                    c.done, ", ", c.failed, ", ", c.retried, ", ", c.expired,
                    ", ", c.dead, ", ", c.lapsed);
    for (int64_t n : c.lateness) absl::StrAppend(&statement, ", ", n);
    statement += ")";
    first = false;
  }
  return std::vector<std::string>{std::move(statement)};
}

absl::StatusOr<std::vector<TopicMinute>> PostgresBackend::Counts(
    absl::Time from, absl::Time to) {
  std::vector<TopicMinute> out;
  DQ_RETURN_IF_ERROR(Read([&](Connection& conn) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(
        Result r, conn.Exec(S(Sql::kCountsRead),
                            Params()
                                .Int(internal::MinuteMicrosOf(ToMicros(from)))
                                .Int(ToMicros(to))));
    out.clear();
    for (int i = 0; i < r.rows(); ++i) {
      out.push_back(
          {r.Text(i, 1), FromMicros(r.Int(i, 0)), ReadCounts(r, i, 2)});
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<std::vector<TopicTotals>> PostgresBackend::CountTotals() {
  std::vector<TopicTotals> out;
  DQ_RETURN_IF_ERROR(Read([&](Connection& conn) -> absl::Status {
    DQ_ASSIGN_OR_RETURN(Result r, conn.Exec(S(Sql::kTotalsRead)));
    out.clear();
    for (int i = 0; i < r.rows(); ++i) {
      out.push_back({r.Text(i, 1), ReadCounts(r, i, 2)});
    }
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace postgres_internal
}  // namespace delayq
