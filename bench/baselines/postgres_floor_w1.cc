// Copyright delayq authors.
//
// W1 on the least queue PostgreSQL can hold, the floor under delayq's
// PostgreSQL store: one table (id bigserial primary key, payload,
// reserved_at) on plain libpq. A producer inserts N immediate 64-byte jobs,
// one transaction each; then a consumer process of its own (this binary
// again, --role=consume) runs C threads, each on its own connection, that
// reserve one job per transaction
//
//   UPDATE t SET reserved_at = now() WHERE id = (SELECT id FROM t
//     WHERE reserved_at IS NULL ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1)
//   RETURNING id, payload
//
// and ack it in another (DELETE), both prepared, until the table is empty.
// The same shape and the same report as
// `workloads --workload=w1 --w1_mode=single`
// (bench/workloads/w1_throughput.cc) and bench/baselines/beanstalk_w1.cc.
//
//   postgres_floor_w1 --postgres=postgresql://postgres@127.0.0.1:5432/postgres
//       --n=20000 --concurrency=8 --json
//
// It has none of what a job store needs beyond that (no due times, no lease
// deadline or redelivery, no topics, no fencing token), so it is a floor to
// measure against, not a design.

#include <postgresql/libpq-fe.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/workloads/report.h"
#include "tests/testing/child_process.h"

ABSL_FLAG(std::string, postgres, "postgresql://postgres@127.0.0.1/postgres",
          "libpq connection string or URI of the server");
ABSL_FLAG(int64_t, n, 20000, "jobs");
ABSL_FLAG(int, concurrency, 8, "consumer threads, one connection each");
ABSL_FLAG(bool, json, false, "print one JSON object per line");
ABSL_FLAG(std::string, role, "", "internal: run as the consumer process");
ABSL_FLAG(std::string, table, "", "internal: the consumer's table");

namespace delayq {
namespace bench {
namespace {

using PgConn = std::unique_ptr<PGconn, void (*)(PGconn*)>;
using PgResult = std::unique_ptr<PGresult, void (*)(PGresult*)>;

absl::StatusOr<PgConn> Connect() {
  PgConn conn(PQconnectdb(absl::GetFlag(FLAGS_postgres).c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return absl::UnavailableError(PQerrorMessage(conn.get()));
  }
  return conn;
}

// The result of a statement, or its error when it did not end in `want`.
absl::StatusOr<PgResult> Check(PGconn* conn, PGresult* raw,
                               ExecStatusType want) {
  PgResult result(raw, &PQclear);
  if (PQresultStatus(result.get()) != want) {
    return absl::InternalError(PQerrorMessage(conn));
  }
  return result;
}

absl::Status Run(PGconn* conn, const std::string& sql) {
  return Check(conn, PQexec(conn, sql.c_str()), PGRES_COMMAND_OK).status();
}

absl::Status Prepare(PGconn* conn, const char* name, const std::string& sql,
                     int params) {
  return Check(conn, PQprepare(conn, name, sql.c_str(), params, nullptr),
               PGRES_COMMAND_OK)
      .status();
}

// Runs prepared statement `name` with text parameters (autocommit: one
// transaction).
absl::StatusOr<PgResult> Exec(PGconn* conn, const char* name,
                              const std::vector<const char*>& params,
                              ExecStatusType want) {
  return Check(conn,
               PQexecPrepared(conn, name, static_cast<int>(params.size()),
                              params.data(), nullptr, nullptr, 0),
               want);
}

absl::Status PrepareConsumer(PGconn* conn, const std::string& table) {
  absl::Status s =
      Prepare(conn, "reserve",
              absl::StrCat(
                  "UPDATE ", table,
                  " SET reserved_at = now() WHERE id = (SELECT id FROM ", table,
                  " WHERE reserved_at IS NULL ORDER BY id "
                  "FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING id, payload"),
              0);
  if (!s.ok()) return s;
  return Prepare(conn, "ack",
                 absl::StrCat("DELETE FROM ", table, " WHERE id = $1"), 1);
}

// One consumer thread's loop: reserve, tally, ack, until a reserve finds
// nothing.
void ConsumeUntilEmpty(PGconn* conn, Tally& tally, std::atomic<int64_t>& errors,
                       std::atomic<int64_t>& last_nanos) {
  for (;;) {
    absl::StatusOr<PgResult> job = Exec(conn, "reserve", {}, PGRES_TUPLES_OK);
    if (!job.ok() || PQntuples(job->get()) == 0) {
      if (!job.ok()) errors.fetch_add(1);
      return;
    }
    const char* id = PQgetvalue(job->get(), 0, 0);
    tally.Deliver(ParseIndex(PQgetvalue(job->get(), 0, 1)));
    if (!Exec(conn, "ack", {id}, PGRES_COMMAND_OK).ok()) errors.fetch_add(1);
    const int64_t now = absl::ToUnixNanos(absl::Now());
    int64_t seen = last_nanos.load();
    while (seen < now && !last_nanos.compare_exchange_weak(seen, now)) {
    }
  }
}

// The consumer process: prints its ConsumedLine().
int RunConsumer(const std::string& table, int64_t n, int concurrency) {
  std::vector<PgConn> links;
  for (int t = 0; t < concurrency; ++t) {
    absl::StatusOr<PgConn> c = Connect();
    absl::Status s = c.ok() ? PrepareConsumer(c->get(), table) : c.status();
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    links.push_back(*std::move(c));
  }
  Tally tally(n);
  std::atomic<int64_t> errors{0};
  std::atomic<int64_t> last_nanos{0};
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&, link = links[t].get()] {
      ConsumeUntilEmpty(link, tally, errors, last_nanos);
    });
  }
  for (std::thread& t : threads) t.join();
  const int64_t last = last_nanos.load();
  BaselineConsumed c;
  c.delivered = tally.delivered();
  c.elapsed_ns = last == 0 ? 0 : last - absl::ToUnixNanos(start);
  c.duplicates = tally.Duplicates();
  c.missing = tally.Missing();
  c.errors = errors.load();
  std::printf("%s\n", ConsumedLine(c).c_str());
  std::fflush(stdout);
  return 0;
}

// Creates the table and inserts N jobs, one transaction each; returns the
// seconds it took.
absl::StatusOr<double> Produce(PGconn* conn, const std::string& table,
                               int64_t n) {
  absl::Status s = Run(conn, absl::StrCat("CREATE TABLE ", table,
                                          " (id bigserial PRIMARY KEY, "
                                          "payload text NOT NULL, "
                                          "reserved_at timestamptz)"));
  if (s.ok()) {
    s = Prepare(conn, "put",
                absl::StrCat("INSERT INTO ", table, " (payload) VALUES ($1)"),
                1);
  }
  if (!s.ok()) return s;
  const std::string pad(56, 'x');
  const absl::Time start = absl::Now();
  for (int64_t i = 0; i < n; ++i) {
    const std::string payload = absl::StrCat(i, "|", pad);
    absl::StatusOr<PgResult> put =
        Exec(conn, "put", {payload.c_str()}, PGRES_COMMAND_OK);
    if (!put.ok()) return put.status();
  }
  return absl::ToDoubleSeconds(absl::Now() - start);
}

// Runs the consumer process and reads its line.
absl::StatusOr<BaselineConsumed> ConsumeInChild(const char* self,
                                                const std::string& table,
                                                int64_t n, int concurrency) {
  testing::ChildProcess consumer(
      {self, "--role=consume", absl::StrCat("--table=", table),
       absl::StrCat("--n=", n), absl::StrCat("--concurrency=", concurrency),
       absl::StrCat("--postgres=", absl::GetFlag(FLAGS_postgres))});
  std::optional<std::string> line =
      consumer.ReadLineStartingWith("consumed ", absl::Minutes(30));
  if (!line.has_value()) return absl::InternalError("the consumer died");
  absl::StatusOr<BaselineConsumed> c = ParseConsumedLine(*line);
  consumer.Wait();
  return c;
}

absl::StatusOr<Report> RunProducer(const char* self) {
  const int64_t n = absl::GetFlag(FLAGS_n);
  const int concurrency = absl::GetFlag(FLAGS_concurrency);
  const std::string table =
      absl::StrCat("floor_w1_", absl::ToUnixMillis(absl::Now()));
  absl::StatusOr<PgConn> conn = Connect();
  if (!conn.ok()) return conn.status();
  absl::StatusOr<double> enqueue_s = Produce(conn->get(), table, n);
  if (!enqueue_s.ok()) return enqueue_s.status();
  absl::StatusOr<BaselineConsumed> c =
      ConsumeInChild(self, table, n, concurrency);
  if (!c.ok()) return c.status();
  if (absl::Status s = Run(conn->get(), absl::StrCat("DROP TABLE ", table));
      !s.ok()) {
    return s;
  }
  return BaselineW1Report("postgres-skip-locked", n, concurrency, *enqueue_s,
                          *c);
}

}  // namespace
}  // namespace bench
}  // namespace delayq

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using delayq::bench::Report;
  if (absl::GetFlag(FLAGS_role) == "consume") {
    return delayq::bench::RunConsumer(absl::GetFlag(FLAGS_table),
                                      absl::GetFlag(FLAGS_n),
                                      absl::GetFlag(FLAGS_concurrency));
  }
  absl::StatusOr<Report> report = delayq::bench::RunProducer(argv[0]);
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
    return 1;
  }
  delayq::bench::Emit({*report}, absl::GetFlag(FLAGS_json));
  return 0;
}
