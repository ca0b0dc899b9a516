// Copyright delayq authors.
//
// Writes the SQLite fuzz target's seed: a database the store made, with jobs
// in every state in two topics, a done job in a third, a paused topic, a
// limit and a schedule.
//
//   bazel run //tests/fuzz:make_sqlite_seed --
//   $PWD/tests/fuzz/corpus/sqlite/store.db

#include <cstdio>
#include <memory>

#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/sqlite_backend.h"

namespace delayq {
namespace {

absl::Status Fill(Backend& store) {
  const absl::Time t0 = absl::FromUnixSeconds(1'767'225'600);  // 2026-01-01Z
  std::vector<NewJob> jobs;
  for (int i = 0; i < 8; ++i) {
    NewJob job;
    job.id = "job-" + std::to_string(i);
    job.topic = i % 2 == 0 ? "mail" : "orders";
    job.payload = "{\"n\":" + std::to_string(i) + "}";
    job.priority = i % 3;
    job.max_attempts = i == 3 ? 1 : 3;
    job.run_at = i < 2 ? t0 + absl::Hours(2) : t0;  // two stay delayed
    if (i == 7) job.expire_at = t0 + absl::Hours(3);
    if (i == 6) job.unique_for = absl::Minutes(5);
    if (i == 5) job.backoff = Backoff::Fixed(absl::Seconds(10));
    jobs.push_back(job);
  }
  if (absl::Status s = store.Add(jobs, t0); !s.ok()) return s;
  // A lease of each topic; the one-attempt job fails into the dead list.
  for (const char* topic : {"mail", "orders"}) {
    absl::StatusOr<std::vector<Lease>> leases =
        store.Reserve(topic, 2, t0, static_cast<ReserveReport*>(nullptr));
    if (!leases.ok()) return leases.status();
    for (const Lease& lease : *leases) {
      if (lease.job.max_attempts == 1) {
        absl::StatusOr<FailOutcome> f =
            store.Fail(lease.job.id, lease.token, "gave up", t0, t0);
        if (!f.ok()) return f.status();
      }
    }
  }
  {
    // A job kept done with its result (NewJob::keep_for).
    NewJob kept;
    kept.id = "report-1";
    kept.topic = "reports";
    kept.payload = "{\"day\":1}";
    kept.run_at = t0;
    kept.keep_for = absl::Hours(24);
    kept.keep_at_most = 10;
    if (absl::Status s = store.Add({kept}, t0); !s.ok()) return s;
    absl::StatusOr<std::vector<Lease>> leases =
        store.Reserve("reports", 1, t0, static_cast<ReserveReport*>(nullptr));
    if (!leases.ok()) return leases.status();
    for (const Lease& lease : *leases) {
      absl::Status s = store.Ack(lease.job.id, lease.token, "{\"rows\":3}", t0);
      if (!s.ok()) return s;
    }
  }
  if (absl::Status s = store.SetPaused("orders", true, t0); !s.ok()) return s;
  TopicLimit limit;
  limit.rate = 5;
  limit.burst = 2;
  limit.concurrency = 3;
  if (absl::Status s = store.SetLimit("mail", limit, t0); !s.ok()) return s;
  ScheduleRecord schedule;
  schedule.name = "nightly";
  schedule.spec = "0 3 * * *";
  schedule.topic = "mail";
  schedule.payload = "report";
  schedule.options.time_zone = "Europe/Berlin";
  return store.PutSchedule(schedule, t0);
}

}  // namespace
}  // namespace delayq

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_sqlite_seed FILE\n");
    return 2;
  }
  delayq::SqliteOptions options;
  options.path = argv[1];
  options.page_size = 512;  // a small seed
  absl::StatusOr<std::unique_ptr<delayq::Backend>> store =
      delayq::OpenSqliteBackend(options);
  absl::Status s = store.ok() ? delayq::Fill(**store) : store.status();
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
