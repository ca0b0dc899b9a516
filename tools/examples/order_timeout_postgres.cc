// Copyright delayq authors.
//
// order_timeout_postgres — the order row and its timeout job in one
// PostgreSQL transaction, twice: through EnqueueInTransaction() on the
// application's libpq connection, and through the SQL function
// <schema>.enqueue() that code which does not link delayq calls.
//
//   bazel run //tools/examples:order_timeout_postgres --
//       'postgres://app:secret@127.0.0.1:5432/shop?schema=jobs'
//       'host=127.0.0.1 port=5432 dbname=shop user=app password=secret'
//
// (one command line).
//
// The first argument is the store's URL, the second the application's own
// libpq connection string to the same database. Prints the jobs it
// enqueued and exits 0; on any error, says what and exits 1. The README's
// PostgreSQL examples are this program's PlaceOrder() and
// PlaceOrderInSql().

#include <postgresql/libpq-fe.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "delayq/delayq.h"

namespace {

// Runs `sql` with text parameters on the application's connection; the
// first column of its first row, if any.
absl::StatusOr<std::string> Exec(PGconn* conn, const std::string& sql,
                                 const std::vector<const char*>& params = {}) {
  PGresult* r = PQexecParams(conn, sql.c_str(), static_cast<int>(params.size()),
                             nullptr, params.data(), nullptr, nullptr, 0);
  const ExecStatusType status = PQresultStatus(r);
  std::string value;
  if (status == PGRES_TUPLES_OK && PQntuples(r) > 0)
    value = PQgetvalue(r, 0, 0);
  PQclear(r);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return absl::InternalError(absl::StrCat(sql, ": ", PQerrorMessage(conn)));
  }
  return value;
}

// Places order `order_id` and enqueues its timeout, all or nothing.
absl::StatusOr<std::string> PlaceOrder(PGconn* conn, const std::string& schema,
                                       const std::string& order_id) {
  if (auto s = Exec(conn, "BEGIN"); !s.ok()) return s.status();
  absl::StatusOr<std::string> job = [&]() -> absl::StatusOr<std::string> {
    auto inserted =
        Exec(conn, "INSERT INTO orders (id, state) VALUES ($1, 'unpaid')",
             {order_id.c_str()});
    if (!inserted.ok()) return inserted.status();
    delayq::JobOptions options;
    options.id = "cancel-" + order_id;  // one timeout per order
    options.delay = absl::Minutes(30);
    return delayq::EnqueueInTransaction(conn, schema, "orders.cancel_unpaid",
                                        order_id, options, absl::Now());
  }();
  if (!job.ok()) {
    Exec(conn, "ROLLBACK").IgnoreError();
    return job.status();
  }
  // Workers everywhere hear of the job (NOTIFY) when this commits.
  if (auto s = Exec(conn, "COMMIT"); !s.ok()) return s.status();
  return job;
}

// The same in SQL alone, as code that does not link delayq would do it.
absl::StatusOr<std::string> PlaceOrderInSql(PGconn* conn,
                                            const std::string& schema,
                                            const std::string& order_id) {
  const std::string timeout_id = "cancel-" + order_id;
  if (auto s = Exec(conn, "BEGIN"); !s.ok()) return s.status();
  auto inserted =
      Exec(conn, "INSERT INTO orders (id, state) VALUES ($1, 'unpaid')",
           {order_id.c_str()});
  absl::StatusOr<std::string> job =
      inserted.ok() ? Exec(conn,
                           absl::StrCat("SELECT ", schema,
                                        ".enqueue('orders.cancel_unpaid', "
                                        "convert_to($1, 'UTF8'), id => $2, "
                                        "delay => '30 minutes')"),
                           {order_id.c_str(), timeout_id.c_str()})
                    : inserted.status();
  if (!job.ok()) {
    Exec(conn, "ROLLBACK").IgnoreError();
    return job.status();
  }
  if (auto s = Exec(conn, "COMMIT"); !s.ok()) return s.status();
  return job;
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "order_timeout_postgres: %s\n",
               std::string(status.message()).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: order_timeout_postgres STORE_URL CONNINFO\n");
    return 2;
  }
  absl::StatusOr<delayq::PostgresOptions> options =
      delayq::ParsePostgresUrl(argv[1]);
  if (!options.ok()) return Fail(options.status());
  // The store creates (or upgrades) delayq's schema, once.
  absl::StatusOr<std::unique_ptr<delayq::Backend>> store =
      delayq::OpenPostgresBackend(*options);
  if (!store.ok()) return Fail(store.status());
  auto scheduler = delayq::Scheduler::Create(*std::move(store));
  if (!scheduler.ok()) return Fail(scheduler.status());

  PGconn* conn = PQconnectdb(argv[2]);
  if (PQstatus(conn) != CONNECTION_OK) {
    const absl::Status refused = absl::UnavailableError(PQerrorMessage(conn));
    PQfinish(conn);
    return Fail(refused);
  }
  const std::string stamp = absl::StrCat(absl::ToUnixMicros(absl::Now()));
  absl::StatusOr<std::string> made = Exec(
      conn,
      "CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, state text)");
  absl::StatusOr<std::string> job =
      made.ok() ? PlaceOrder(conn, options->schema, "order-a" + stamp)
                : made.status();
  absl::StatusOr<std::string> sql_job =
      job.ok() ? PlaceOrderInSql(conn, options->schema, "order-b" + stamp)
               : job.status();
  PQfinish(conn);
  if (!sql_job.ok()) return Fail(sql_job.status());

  for (const std::string& id : {*job, *sql_job}) {
    absl::StatusOr<delayq::Job> stored = (*scheduler)->Get(id);
    if (!stored.ok()) return Fail(stored.status());
    std::printf("job %s (%s, payload %s) runs at %s\n", stored->id.c_str(),
                stored->topic.c_str(), stored->payload.c_str(),
                absl::FormatTime(stored->run_at).c_str());
  }
  return 0;
}
