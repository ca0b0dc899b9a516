// Copyright delayq authors.
//
// order_timeout_sqlite — the order row and its timeout job in one SQLite
// transaction: an order is placed, "cancel it if unpaid in 30 minutes" is
// enqueued in the same transaction, and both exist once it commits (or
// neither, after a rollback or a crash before the commit).
//
//   bazel run //tools/examples:order_timeout_sqlite -- /tmp/shop.db
//
// Prints the job it enqueued and exits 0; on any error, says what and
// exits 1. The README's SQLite example is this program's PlaceOrder().

#include <sqlite3.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "delayq/delayq.h"
#include "delayq/sqlite_transaction.h"

namespace {

// Runs `sql` on the application's connection.
absl::Status Exec(sqlite3* db, const std::string& sql) {
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    return absl::InternalError(absl::StrCat(sql, ": ", sqlite3_errmsg(db)));
  }
  return absl::OkStatus();
}

// Adds the order's row, unpaid.
absl::Status InsertOrder(sqlite3* db, const std::string& order_id) {
  sqlite3_stmt* insert = nullptr;
  int rc = sqlite3_prepare_v2(
      db, "INSERT INTO orders (id, state) VALUES (?, 'unpaid')", -1, &insert,
      nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(insert, 1, order_id.c_str(), -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(insert);
  }
  sqlite3_finalize(insert);
  if (rc != SQLITE_DONE) return absl::InternalError(sqlite3_errmsg(db));
  return absl::OkStatus();
}

// Places order `order_id` and enqueues its timeout, all or nothing.
absl::StatusOr<std::string> PlaceOrder(sqlite3* db,
                                       const std::string& order_id) {
  // IMMEDIATE: the write lock up front, so no other writer can cut in.
  if (absl::Status s = Exec(db, "BEGIN IMMEDIATE"); !s.ok()) return s;
  absl::StatusOr<std::string> job = [&]() -> absl::StatusOr<std::string> {
    if (absl::Status s = InsertOrder(db, order_id); !s.ok()) return s;
    delayq::JobOptions options;
    options.id = "cancel-" + order_id;  // one timeout per order
    options.delay = absl::Minutes(30);
    return delayq::EnqueueInTransaction(db, "orders.cancel_unpaid", order_id,
                                        options, absl::Now());
  }();
  if (!job.ok()) {
    Exec(db, "ROLLBACK").IgnoreError();
    return job.status();
  }
  // Workers of every process on the file hear of the job once this returns.
  if (absl::Status s = Exec(db, "COMMIT"); !s.ok()) return s;
  return job;
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "order_timeout_sqlite: %s\n",
               std::string(status.message()).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "shop.db";
  // The store creates (or upgrades) delayq's tables in the file, once.
  delayq::SqliteOptions store_options;
  store_options.path = path;
  absl::StatusOr<std::unique_ptr<delayq::Backend>> store =
      delayq::OpenSqliteBackend(store_options);
  if (!store.ok()) return Fail(store.status());
  auto scheduler = delayq::Scheduler::Create(*std::move(store));
  if (!scheduler.ok()) return Fail(scheduler.status());

  // The application's own connection to the same file, with its tables.
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) !=
      SQLITE_OK) {
    return Fail(absl::UnavailableError(sqlite3_errmsg(db)));
  }
  sqlite3_busy_timeout(db, 5000);
  absl::Status made = Exec(
      db,
      "CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, state TEXT)");
  const std::string order_id =
      absl::StrCat("order-", absl::ToUnixMicros(absl::Now()));
  absl::StatusOr<std::string> job = made.ok() ? PlaceOrder(db, order_id) : made;
  sqlite3_close(db);
  if (!job.ok()) return Fail(job.status());

  absl::StatusOr<delayq::Job> stored = (*scheduler)->Get(*job);
  if (!stored.ok()) return Fail(stored.status());
  std::printf("order %s placed; job %s (%s) runs at %s\n", order_id.c_str(),
              stored->id.c_str(), stored->topic.c_str(),
              absl::FormatTime(stored->run_at).c_str());
  return 0;
}
