// Copyright delayq authors.
//
// The PostgreSQL Backend's plain paths: a reservation of a topic with no
// pause, limit or due job to mind, and the acknowledgement of a job that
// nothing waits for, each one server-side function (schema.cc, version 7)
// sent with its BEGIN and COMMIT in one round trip. The general path is
// several statements, each a round trip, and concurrent consumers of a
// topic wait for each other's commits the longer.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/postgres/internal/backend_impl.h"
#include "backends/postgres/internal/connection.h"
#include "backends/postgres/internal/schema.h"
#include "backends/postgres/internal/statements.h"
#include "delayq/counts.h"
#include "src/common/lease_token.h"
#include "src/common/status_macros.h"
#include "src/common/transition_counts.h"

namespace delayq {
namespace postgres_internal {

bool PostgresBackend::PlainPathsOpen(absl::Time now) const {
  return internal::MinuteMicrosOf(ToMicros(now)) <= folded_at_minute_us_.load();
}

namespace {

// The minute the counts of a transition at `now_us` go to; none when the
// store keeps no counts.
std::optional<int64_t> CountsMinute(const CountsOptions& options,
                                    int64_t now_us) {
  if (!options.enabled) return std::nullopt;
  return internal::MinuteMicrosOf(now_us);
}

}  // namespace

absl::StatusOr<bool> PostgresBackend::ReservePlain(absl::string_view topic,
                                                   int max, absl::Time now,
                                                   absl::string_view holder,
                                                   std::vector<Lease>* leases) {
  bool plain = true;
  const std::vector<std::optional<int64_t>> bounds(
      kLatenessBoundsMicros.begin(), kLatenessBoundsMicros.end());
  DQ_RETURN_IF_ERROR(Transaction(now, [&](Tx& tx) -> absl::Status {
    leases->clear();
    tx.conn->CommitWithNext();
    tx.committed = true;
    DQ_ASSIGN_OR_RETURN(
        Result rows,
        tx.conn->Exec(
            S(Sql::kReservePlain),
            Params()
                .Text(topic)
                .Int(max)
                .Int(tx.now_us)
                .Int(static_cast<int64_t>(internal::NewFirstLeaseToken()))
                .Text(holder)
                .MaybeInt(CountsMinute(counts_options_, tx.now_us))
                .IntArray(bounds)
                .Text(NewsChannel(schema_))));
    plain = !(rows.rows() == 1 && rows.IsNull(0, 0));
    if (!plain) return absl::OkStatus();
    for (int i = 0; i < rows.rows(); ++i) {
      Lease lease;
      lease.job = ReadJob(rows, i, &lease.token);
      lease.deadline = lease.job.deadline;
      leases->push_back(std::move(lease));
    }
    // The tokens follow the ready order.
    std::sort(leases->begin(), leases->end(),
              [](const Lease& a, const Lease& b) { return a.token < b.token; });
    return absl::OkStatus();
  }));
  return plain;
}

absl::StatusOr<bool> PostgresBackend::AckPlain(absl::string_view id,
                                               uint64_t token, absl::Time now) {
  bool plain = false;
  DQ_RETURN_IF_ERROR(Transaction(now, [&](Tx& tx) -> absl::Status {
    tx.conn->CommitWithNext();
    tx.committed = true;
    DQ_ASSIGN_OR_RETURN(
        Result r,
        tx.conn->Exec(S(Sql::kAckPlain),
                      Params()
                          .Text(id)
                          .Int(static_cast<int64_t>(token))
                          .Int(tx.now_us)
                          .MaybeInt(CountsMinute(counts_options_, tx.now_us))));
    plain = r.Bool(0, 0);
    return absl::OkStatus();
  }));
  return plain;
}

}  // namespace postgres_internal
}  // namespace delayq
