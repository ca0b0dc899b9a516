// Copyright delayq authors.
//
// The SQLite store's counts (delayq/counts.h): noted per topic while a write
// transaction runs, written by it before its commit, read by Counts() and
// CountTotals(). See schema.cc, versions 9, 10 and 16, for the tables.

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/sqlite/internal/backend_impl.h"
#include "backends/sqlite/internal/db.h"
#include "backends/sqlite/internal/statements.h"
#include "src/common/status_macros.h"
#include "src/common/transition_counts.h"

namespace delayq {
namespace sqlite_internal {
namespace {

constexpr int64_t kTotalsMinute = -1;

// Decodes DQ_COUNT_COLUMNS from column `first` on.
JobCounts ReadCounts(const Statement& s, int first) {
  JobCounts c;
  int64_t* fields[] = {&c.enqueued, &c.done, &c.failed, &c.retried,
                       &c.expired,  &c.dead, &c.lapsed};
  int col = first;
  for (int64_t* f : fields) *f = s.Int64(col++);
  for (int64_t& n : c.lateness) n = s.Int64(col++);
  return c;
}

// A transition's counts in JobCounts order, the order of DQ_COUNT_COLUMNS.
constexpr int kCountColumns = 7 + kLatenessBuckets;
std::array<int64_t, kCountColumns> CountValues(const JobCounts& c) {
  std::array<int64_t, kCountColumns> v = {
      c.enqueued, c.done, c.failed, c.retried, c.expired, c.dead, c.lapsed};
  std::copy(c.lateness.begin(), c.lateness.end(), v.begin() + 7);
  return v;
}

// The statements that add to a topic's row of one minute in topic_counts,
// naming only the counts that moved (bit i of `moved`: column i of
// DQ_COUNT_COLUMNS): most transactions move one or two (an enqueue moves
// `enqueued` alone), and every column named costs work on each write. The
// row is there but for the first write of a minute, so the write is an
// UPDATE by the key, and an INSERT only when that changed nothing: cheaper
// than an upsert, which looks for the row twice.
std::string CountWriteSql(uint32_t moved, bool insert) {
  static const std::vector<std::string>* const kNames =
      new std::vector<std::string>(absl::StrSplit(DQ_COUNT_COLUMNS, ", "));
  std::vector<std::string> names, params, adds;
  for (int i = 0; i < kCountColumns; ++i) {
    if (!(moved & (1u << i))) continue;
    const std::string& name = (*kNames)[i];
    const std::string param = absl::StrCat("?", params.size() + 3);
    names.push_back(name);
    params.push_back(param);
    adds.push_back(absl::StrCat(name, " = ", name, " + ", param));
  }
  if (insert) {
    return absl::StrCat("INSERT INTO topic_counts (minute_us, topic, state, ",
                        absl::StrJoin(names, ", "), ") VALUES (?1, ?2, -1, ",
                        absl::StrJoin(params, ", "), ")");
  }
  return absl::StrCat("UPDATE topic_counts SET ", absl::StrJoin(adds, ", "),
                      " WHERE topic = ?2 AND state = -1 AND minute_us = ?1");
}

}  // namespace

absl::StatusOr<Statement*> SqliteBackend::CountWrite(uint32_t moved,
                                                     bool insert) {
  std::unique_ptr<Statement>& write =
      count_writes_[moved | (insert ? 1u << kCountColumns : 0)];
  if (write == nullptr) {
    DQ_ASSIGN_OR_RETURN(write, conn_->Prepare(CountWriteSql(moved, insert)));
  }
  return write.get();
}

void SqliteBackend::NoteCount(absl::string_view topic, const JobCounts& delta) {
  if (!counts_options_.enabled) return;
  pending_counts_[internal::MinuteMicrosOf(op_now_us_)][topic] += delta;
}

absl::Status SqliteBackend::WriteCounts() {
  if (pending_counts_.empty()) return absl::OkStatus();
  int64_t latest = 0;
  for (const auto& [minute, topics] : pending_counts_) {
    latest = std::max(latest, minute);
    for (const auto& [topic, counts] : topics) {
      const std::array<int64_t, kCountColumns> values = CountValues(counts);
      uint32_t moved = 0;
      for (int i = 0; i < kCountColumns; ++i) {
        if (values[i] != 0) moved |= 1u << i;
      }
      if (moved == 0) continue;
      for (bool insert : {false, true}) {
        DQ_ASSIGN_OR_RETURN(Statement * write, CountWrite(moved, insert));
        ScopedReset reset(write);
        write->BindInt64(1, minute);
        write->BindText(2, topic);
        int param = 3;
        for (int64_t n : values) {
          if (n != 0) write->BindInt64(param++, n);
        }
        DQ_ASSIGN_OR_RETURN(int changed, write->Run());
        if (changed > 0) break;
      }
    }
  }
  if (latest <= folded_at_minute_us_) return absl::OkStatus();
  folded_at_minute_us_ = latest;
  return FoldCounts(latest);
}

absl::Status SqliteBackend::FoldCounts(int64_t minute) {
  // The minutes before this one into their rows and the totals, then out of
  // topic_counts; then the minutes that left the window.
  for (Statement* step :
       {s_.counts_fold_minutes.get(), s_.counts_fold_totals.get(),
        s_.counts_fold_drop.get()}) {
    ScopedReset reset(step);
    step->BindInt64(1, minute);
    DQ_RETURN_IF_ERROR(step->Run().status());
  }
  ScopedReset reset(s_.counts_prune.get());
  s_.counts_prune->BindInt64(
      1, minute - absl::ToInt64Microseconds(counts_options_.window) +
             absl::ToInt64Microseconds(absl::Minutes(1)));
  return s_.counts_prune->Run().status();
}

absl::StatusOr<std::vector<TopicMinute>> SqliteBackend::Counts(absl::Time from,
                                                               absl::Time to) {
  internal::MutexLock lock(&mu_);
  std::vector<TopicMinute> out;
  Statement* read = s_.counts_read.get();
  ScopedReset reset(read);
  read->BindInt64(1, internal::MinuteMicrosOf(ToMicros(from)));
  read->BindInt64(2, ToMicros(to));
  while (true) {
    DQ_ASSIGN_OR_RETURN(bool row, read->Step());
    if (!row) break;
    out.push_back(
        {read->Text(1), FromMicros(read->Int64(0)), ReadCounts(*read, 2)});
  }
  return out;
}

absl::StatusOr<std::vector<TopicTotals>> SqliteBackend::CountTotals() {
  internal::MutexLock lock(&mu_);
  std::vector<TopicTotals> out;
  Statement* read = s_.totals_read.get();
  ScopedReset reset(read);
  while (true) {
    DQ_ASSIGN_OR_RETURN(bool row, read->Step());
    if (!row) break;
    out.push_back({read->Text(1), ReadCounts(*read, 2)});
  }
  return out;
}

}  // namespace sqlite_internal
}  // namespace delayq
