// Copyright delayq authors.

#include "bench/workloads/postgres_stats.h"

#include <postgresql/libpq-fe.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace delayq {
namespace bench {
namespace {

using PgConn = std::unique_ptr<PGconn, void (*)(PGconn*)>;
using PgResult = std::unique_ptr<PGresult, void (*)(PGresult*)>;

// The probe's own statements name these views; they are left out.
constexpr char kTransactions[] =
    "SELECT xact_commit + xact_rollback FROM pg_stat_database "
    "WHERE datname = current_database()";
// Statements are keyed by their first words, the store's schema name left
// out so that runs on different schemas compare.
constexpr char kStatements[] =
    "SELECT left(regexp_replace(regexp_replace(query, '\"[^\"]*\"\\.', '', "
    "'g'), '\\s+', ' ', 'g'), 60), sum(calls) "
    "FROM pg_stat_statements JOIN pg_database d ON d.oid = dbid "
    "WHERE d.datname = current_database() AND query NOT LIKE '%pg_stat%' "
    "GROUP BY 1";

struct Snapshot {
  int64_t transactions = 0;
  bool has_statements = false;
  CommandCounts statements;
};

absl::StatusOr<PgResult> Query(PGconn* conn, const char* sql) {
  PgResult result(PQexec(conn, sql), &PQclear);
  if (PQresultStatus(result.get()) != PGRES_TUPLES_OK) {
    return absl::UnavailableError(PQerrorMessage(conn));
  }
  return result;
}

int64_t IntAt(const PGresult* r, int row, int col) {
  int64_t v = 0;
  (void)absl::SimpleAtoi(PQgetvalue(r, row, col), &v);
  return v;
}

absl::StatusOr<Snapshot> Take(PGconn* conn) {
  Snapshot snapshot;
  absl::StatusOr<PgResult> xacts = Query(conn, kTransactions);
  if (!xacts.ok()) return xacts.status();
  if (PQntuples(xacts->get()) == 1) {
    snapshot.transactions = IntAt(xacts->get(), 0, 0);
  }
  absl::StatusOr<PgResult> statements = Query(conn, kStatements);
  if (!statements.ok()) return snapshot;  // pg_stat_statements not loaded
  snapshot.has_statements = true;
  for (int row = 0; row < PQntuples(statements->get()); ++row) {
    snapshot.statements[PQgetvalue(statements->get(), row, 0)] +=
        IntAt(statements->get(), row, 1);
  }
  return snapshot;
}

}  // namespace

absl::StatusOr<PostgresIdleLoad> MeasurePostgresIdleLoad(
    absl::string_view store_url, absl::Duration window) {
  const std::string conninfo(store_url.substr(0, store_url.find('?')));
  PgConn conn(PQconnectdb(conninfo.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return absl::UnavailableError(PQerrorMessage(conn.get()));
  }
  // Fails harmlessly where the library is not preloaded or installed.
  PQclear(
      PQexec(conn.get(), "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"));
  absl::StatusOr<Snapshot> before = Take(conn.get());
  if (!before.ok()) return before.status();
  absl::SleepFor(window);
  absl::StatusOr<Snapshot> after = Take(conn.get());
  if (!after.ok()) return after.status();

  const double seconds = absl::ToDoubleSeconds(window);
  PostgresIdleLoad load;
  load.transactions = after->transactions - before->transactions - 1;
  load.transactions_per_second = load.transactions / seconds;
  if (before->has_statements && after->has_statements) {
    load.statements = 0;
    for (const auto& [text, calls] : after->statements) {
      const auto was = before->statements.find(text);
      const int64_t delta =
          calls - (was == before->statements.end() ? 0 : was->second);
      if (delta == 0) continue;
      load.by_statement[text] = delta;
      load.statements += delta;
    }
    load.statements_per_second = load.statements / seconds;
  }
  return load;
}

}  // namespace bench
}  // namespace delayq
