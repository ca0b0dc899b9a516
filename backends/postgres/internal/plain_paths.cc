// Copyright delayq authors.
//
// The PostgreSQL Backend's plain paths: a reservation of a topic with no
// pause, limit or due job but delayed ones to mind, and the
// acknowledgement of a job that nothing waits for, each one server-side
// function (schema.cc, version 7) sent with its BEGIN and COMMIT in one
// round trip; and both at once for a worker going on to its next job, in
// one transaction and one commit. The general path is several statements,
// each a round trip. And a connection's warm-up for workers, which runs
// the plain paths once and rolls them back.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
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
namespace {

// What reserve_plain() raises when a job it would lease waits for others:
// it undid everything, and the general path reads their results.
constexpr char kLeaseWaits[] = "DQ001";

// The minute the counts of a transition at `now_us` go to; none when the
// store keeps no counts.
std::optional<int64_t> CountsMinute(const CountsOptions& options,
                                    int64_t now_us) {
  if (!options.enabled) return std::nullopt;
  return internal::MinuteMicrosOf(now_us);
}

// reserve_plain()'s parameters from p_topic on, after `params`.
Params& ReserveParams(Params& params, absl::string_view topic, int max,
                      const Tx& tx, const ReserveReport* report,
                      const CountsOptions& counts, const std::string& channel) {
  static const std::vector<std::optional<int64_t>> bounds(
      kLatenessBoundsMicros.begin(), kLatenessBoundsMicros.end());
  return params.Text(topic)
      .Int(max)
      .Int(kReservePromoteLimit)
      .Int(tx.now_us)
      .Int(static_cast<int64_t>(internal::NewFirstLeaseToken()))
      .Text(report == nullptr ? "" : report->holder)
      .MaybeInt(CountsMinute(counts, tx.now_us))
      .IntArray(bounds)
      .Text(channel);
}

}  // namespace

bool PostgresBackend::PlainPathsOpen(absl::Time now) const {
  return internal::MinuteMicrosOf(ToMicros(now)) <= folded_at_minute_us_.load();
}

bool PostgresBackend::ReadPlainReservation(const Result& rows,
                                           ReserveReport* report,
                                           std::vector<Lease>* leases) const {
  if (rows.rows() == 1 && rows.IsNull(0, 0)) return false;
  for (int i = 0; i < rows.rows(); ++i) {
    Lease lease;
    lease.job = ReadJob(rows, i, &lease.token);
    if (lease.job.state == JobState::kReserved) {
      lease.deadline = lease.job.deadline;
      leases->push_back(std::move(lease));
    } else if (report != nullptr) {
      Transition t;
      t.kind = Transition::Kind::kPromoted;
      t.id = lease.job.id;
      t.topic = lease.job.topic;
      t.attempts = lease.job.attempts;
      report->moved.push_back(std::move(t));
    }
  }
  // The tokens follow the ready order.
  std::sort(leases->begin(), leases->end(),
            [](const Lease& a, const Lease& b) { return a.token < b.token; });
  if (report != nullptr) report->limited_until = absl::InfinitePast();
  return true;
}

absl::Status PostgresBackend::RunPlainReservation(
    const char* sql, const Params& first, absl::string_view topic, int max,
    absl::Time now, ReserveReport* report, std::vector<Lease>* leases,
    bool* waits, absl::FunctionRef<void(const Result&)> read) {
  const size_t moved = report == nullptr ? 0 : report->moved.size();
  return Transaction(now, [&](Tx& tx) -> absl::Status {
    leases->clear();
    if (report != nullptr) report->moved.resize(moved);
    tx.conn->CommitWithNext();
    tx.committed = true;
    Params params = first;
    absl::StatusOr<Result> rows = tx.conn->Exec(
        S(sql), ReserveParams(params, topic, max, tx, report, counts_options_,
                              NewsChannel(schema_)));
    if (!rows.ok() && tx.conn->last_sql_state() == kLeaseWaits) *waits = true;
    DQ_RETURN_IF_ERROR(rows.status());
    read(*rows);
    return absl::OkStatus();
  });
}

absl::StatusOr<bool> PostgresBackend::ReservePlain(absl::string_view topic,
                                                   int max, absl::Time now,
                                                   ReserveReport* report,
                                                   std::vector<Lease>* leases) {
  bool plain = true, waits = false;
  absl::Status status =
      RunPlainReservation(Sql::kReservePlain, Params(), topic, max, now, report,
                          leases, &waits, [&](const Result& rows) {
                            plain = ReadPlainReservation(rows, report, leases);
                          });
  if (waits || !plain) return false;
  DQ_RETURN_IF_ERROR(status);
  return true;
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

absl::StatusOr<std::optional<bool>> PostgresBackend::AckAndReservePlain(
    absl::string_view id, uint64_t token, absl::string_view topic, int max,
    absl::Time now, ReserveReport* report, std::vector<Lease>* leases) {
  std::optional<bool> plain;
  bool waits = false;
  Params first;
  first.Text(id).Int(static_cast<int64_t>(token));
  absl::Status status = RunPlainReservation(
      Sql::kAckAndReservePlain, first, topic, max, now, report, leases, &waits,
      [&](const Result& rows) {
        if (rows.rows() == 1 && rows.IsNull(0, 0) && !rows.IsNull(0, 4)) {
          plain.reset();  // the ack was not plain (state -1): nothing done
        } else {
          plain = ReadPlainReservation(rows, report, leases);
        }
      });
  // A lease that waits for others undid the ack too: the two in turn.
  if (waits) return std::optional<bool>();
  DQ_RETURN_IF_ERROR(status);
  return plain;
}

void PostgresBackend::WarmUp(Connection* conn, absl::Time now) {
  conn->set_warm();
  Tx tx;
  tx.conn = conn;
  tx.now_us = ToMicros(now);
  // A topic and id of its own: warm-ups on other connections at the same
  // moment neither see its job nor wait for its row.
  const std::string name = absl::StrCat(
      "delayq.warm-up.", absl::Hex(internal::NewFirstLeaseToken()));
  const std::optional<int64_t> minute =
      CountsMinute(counts_options_, tx.now_us);
  auto steps = [&]() -> absl::Status {
    DQ_RETURN_IF_ERROR(conn->Run("BEGIN"));
    DQ_RETURN_IF_ERROR(conn->Run(S("SELECT {s}.enqueue($1, ''::bytea, $1)"),
                                 Params().Text(name)));
    Params reserve;
    DQ_ASSIGN_OR_RETURN(
        Result leased,
        conn->Exec(S(Sql::kReservePlain),
                   ReserveParams(reserve, name, 1, tx, nullptr, counts_options_,
                                 NewsChannel(schema_))));
    uint64_t token = 0;
    if (leased.rows() != 1 || leased.IsNull(0, 0)) {
      return absl::InternalError("the warm-up's job was not reserved");
    }
    ReadJob(leased, 0, &token);
    Params ack;
    ack.Text(name).Int(static_cast<int64_t>(token));
    DQ_RETURN_IF_ERROR(
        conn->Run(S(Sql::kAckAndReservePlain),
                  ReserveParams(ack, name, 1, tx, nullptr, counts_options_,
                                NewsChannel(schema_))));
    DQ_RETURN_IF_ERROR(
        conn->Run(S(Sql::kAckPlain), Params()
                                         .Text(name)
                                         .Int(static_cast<int64_t>(token))
                                         .Int(tx.now_us)
                                         .MaybeInt(minute)));
    // The timer's look for due jobs, at a time before any is due.
    constexpr int64_t kBeforeAll = std::numeric_limits<int64_t>::min();
    DQ_RETURN_IF_ERROR(conn->Run(S(Sql::kDropLeft), Params().Int(kBeforeAll)));
    return conn->Run(S(Sql::kMoveDue),
                     MoveDueParams(Params().Null(), kBeforeAll, /*limit=*/1));
  };
  // It only saves time: whatever went wrong, the call goes on (a lost
  // connection fails it, and is replaced, as it would have without).
  steps().IgnoreError();
  if (conn->InTransaction() && !conn->Broken()) {
    conn->Run("ROLLBACK").IgnoreError();
  }
}

AckReserved PostgresBackend::AckAndReserve(absl::string_view id, uint64_t token,
                                           absl::string_view result,
                                           absl::string_view topic, int max,
                                           absl::Time now,
                                           ReserveReport* report) {
  reserving_.store(true, std::memory_order_relaxed);
  if (!PlainPathsOpen(now)) {
    return Backend::AckAndReserve(id, token, result, topic, max, now, report);
  }
  std::vector<Lease> leases;
  absl::StatusOr<std::optional<bool>> plain =
      AckAndReservePlain(id, token, topic, max, now, report, &leases);
  AckReserved out;
  if (!plain.ok()) {
    out.acked = plain.status();
    out.leases = plain.status();
    return out;
  }
  if (!plain->has_value()) {
    return Backend::AckAndReserve(id, token, result, topic, max, now, report);
  }
  out.acked = absl::OkStatus();
  if (**plain) {
    out.leases = std::move(leases);
  } else {
    out.leases = ReserveGeneral(topic, max, now, report);
  }
  return out;
}

}  // namespace postgres_internal
}  // namespace delayq
