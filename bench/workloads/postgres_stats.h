// Copyright delayq authors.
//
// postgres_stats.h — how many transactions and statements a PostgreSQL
// server ran, to measure the load a queue puts on it while it has nothing
// to do.

#ifndef DELAYQ_BENCH_WORKLOADS_POSTGRES_STATS_H_
#define DELAYQ_BENCH_WORKLOADS_POSTGRES_STATS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "bench/workloads/redis_stats.h"

namespace delayq {
namespace bench {

// PostgresIdleLoad
//
// What other clients ran in the store's database during `window`.
// Transactions come from pg_stat_database (committed plus rolled back, less
// the one the first snapshot took); a backend reports them when it goes
// idle, at most every second and at the latest 10 s after its last one, so
// a short window can miss or add a few. Statements come from
// pg_stat_statements, which counts at once; -1 (and no breakdown) when the
// server does not load it (shared_preload_libraries).
struct PostgresIdleLoad {
  int64_t transactions = 0;
  double transactions_per_second = 0;
  int64_t statements = -1;
  double statements_per_second = -1;
  // Calls per statement, keyed by its first words without schema names.
  CommandCounts by_statement;
};

// `store_url` is the store's postgres:// URL; its query (?schema=...) is
// dropped to connect.
absl::StatusOr<PostgresIdleLoad> MeasurePostgresIdleLoad(
    absl::string_view store_url, absl::Duration window);

}  // namespace bench
}  // namespace delayq

#endif  // DELAYQ_BENCH_WORKLOADS_POSTGRES_STATS_H_
