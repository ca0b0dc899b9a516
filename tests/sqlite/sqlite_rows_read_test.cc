// Copyright delayq authors.
//
// How many rows the busy paths read, as SQLite counts them: a reservation,
// an ack and an event-log append take about as many steps of SQLite's
// virtual machine (each row a statement visits is at least one) in a big
// store as in a small one, whether or not the file has statistics for the
// query planner (ANALYZE, which an application that shares the file may
// run). A statement that read every job of its topic, or the whole log,
// would take tens of thousands of steps more per call in the big store.

#include <sqlite3.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "delayq/sqlite_backend.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace {

using ::delayq::testing::FreshDbPath;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);
constexpr char kTopic[] = "work";

// The steps of every statement that finished on a connection opened since
// CountSteps() was first called: all of them, and those of full table
// scans. SQLite's own counters, read (and reset) as each statement ends.
std::atomic<int64_t> vm_steps{0};
std::atomic<int64_t> scan_steps{0};

int OnStatementEnd(unsigned type, void*, void* stmt, void*) {
  if (type != SQLITE_TRACE_PROFILE) return 0;
  auto* s = static_cast<sqlite3_stmt*>(stmt);
  vm_steps += sqlite3_stmt_status(s, SQLITE_STMTSTATUS_VM_STEP, 1);
  scan_steps += sqlite3_stmt_status(s, SQLITE_STMTSTATUS_FULLSCAN_STEP, 1);
  return 0;
}

int TraceConnection(sqlite3* db, char**, const sqlite3_api_routines*) {
  sqlite3_trace_v2(db, SQLITE_TRACE_PROFILE, OnStatementEnd, nullptr);
  return SQLITE_OK;
}

void CountSteps() {
  sqlite3_auto_extension(reinterpret_cast<void (*)()>(TraceConnection));
}

// What one kind of call took, per call.
struct PerCall {
  double reserve = 0, ack = 0, append = 0;
  int64_t scan_steps = 0;  // all calls together
};

std::unique_ptr<Backend> Open(const std::string& path, int64_t max_events) {
  SqliteOptions options;
  options.path = path;
  options.events.max_events = max_events;
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenSqliteBackend(options);
  EXPECT_OK(backend);
  return backend.ok() ? *std::move(backend) : nullptr;
}

std::vector<NewJob> Jobs(absl::string_view prefix, int n, absl::Time run_at) {
  std::vector<NewJob> jobs;
  for (int i = 0; i < n; ++i) {
    NewJob job = testing::TestJob(absl::StrCat(prefix, i), kTopic, run_at);
    job.ttr = absl::Hours(1);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

LoggedEvent Event(EventType type, const std::string& id) {
  LoggedEvent e;
  e.type = type;
  e.id = id;
  e.topic = kTopic;
  e.at = kNow;
  e.who = "test";
  return e;
}

// Adds `n` jobs kept done for an hour once acked, and acks them: every
// later ack of the topic looks for its done jobs whose time is up.
void KeepDone(Backend& backend, int n) {
  std::vector<NewJob> jobs = Jobs("kept-", n, kNow);
  for (NewJob& job : jobs) {
    job.keep_for = absl::Hours(1);
    job.keep_at_most = n;
  }
  ASSERT_OK(backend.Add(jobs, kNow));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend.Reserve(kTopic, n, kNow));
  ASSERT_EQ(leases.size(), static_cast<size_t>(n));
  for (const Lease& lease : leases) {
    ASSERT_OK(backend.Ack(lease.job.id, lease.token, "done", kNow));
  }
}

// A store whose topic holds `ready` ready jobs, as many delayed ones due in
// an hour, a tenth as many reserved for an hour, a fiftieth kept done for
// an hour, and whose log holds `events` events (its bound: each append
// trims it).
void Fill(const std::string& path, int ready, int64_t events) {
  std::unique_ptr<Backend> backend = Open(path, events);
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add(Jobs("leased-", ready / 10, kNow), kNow));
  ASSERT_OK(backend->Reserve(kTopic, ready / 10, kNow).status());
  ASSERT_NO_FATAL_FAILURE(KeepDone(*backend, ready / 50));
  ASSERT_OK(backend->Add(Jobs("later-", ready, kNow + absl::Hours(1)), kNow));
  ASSERT_OK(backend->Add(Jobs("ready-", ready, kNow), kNow));
  std::vector<LoggedEvent> batch;
  for (int64_t i = 0; i < events; ++i) {
    batch.push_back(Event(EventType::kEnqueued, absl::StrCat("ready-", i)));
    if (batch.size() == 1000 || i + 1 == events) {
      ASSERT_OK(backend->AppendEvents(batch));
      batch.clear();
    }
  }
}

// Reserves, logs, acks and logs `calls` jobs of the store at `path`, one
// job per call, as a worker does; what each kind of call took.
PerCall Measure(const std::string& path, int64_t max_events, int calls) {
  PerCall out;
  std::unique_ptr<Backend> backend = Open(path, max_events);
  EXPECT_NE(backend, nullptr);
  if (backend == nullptr) return out;
  int64_t reserve = 0, ack = 0, append = 0;
  vm_steps = 0;
  scan_steps = 0;
  for (int i = 0; i < calls; ++i) {
    absl::StatusOr<std::vector<Lease>> leases =
        backend->Reserve(kTopic, 1, kNow);
    reserve += vm_steps.exchange(0);
    EXPECT_OK(leases);
    if (!leases.ok() || leases->size() != 1) {
      ADD_FAILURE() << "no job to reserve at call " << i;
      return out;
    }
    const Lease& lease = (*leases)[0];
    EXPECT_OK(
        backend->AppendEvents({Event(EventType::kReserved, lease.job.id)}));
    append += vm_steps.exchange(0);
    EXPECT_OK(backend->Ack(lease.job.id, lease.token, "", kNow));
    ack += vm_steps.exchange(0);
    EXPECT_OK(
        backend->AppendEvents({Event(EventType::kSucceeded, lease.job.id)}));
    append += vm_steps.exchange(0);
  }
  out.reserve = static_cast<double>(reserve) / calls;
  out.ack = static_cast<double>(ack) / calls;
  out.append = static_cast<double>(append) / (2 * calls);
  out.scan_steps = scan_steps;
  return out;
}

std::string Describe(const PerCall& c) {
  return absl::StrCat("steps per reserve ", c.reserve, ", per ack ", c.ack,
                      ", per append ", c.append, "; full-scan steps ",
                      c.scan_steps);
}

// Within twice the small store's steps per call: the big one holds
// hundreds of times more rows. The only full scan is of the counts of
// the store's topics (the first write of a minute folds them, see
// counts.cc), which are as many in both stores.
void ExpectAboutAsFew(const PerCall& big, const PerCall& small) {
  EXPECT_LE(big.reserve, 2 * small.reserve) << Describe(big);
  EXPECT_LE(big.ack, 2 * small.ack) << Describe(big);
  EXPECT_LE(big.append, 2 * small.append) << Describe(big);
  EXPECT_LE(big.scan_steps, small.scan_steps) << Describe(big);
}

void Analyze(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "ANALYZE", nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(SqliteRowsReadTest, ABigStoreReservesAcksAndLogsReadingFewRows) {
  CountSteps();
  constexpr int kCalls = 200;
  const std::string small_path = FreshDbPath("small");
  ASSERT_NO_FATAL_FAILURE(Fill(small_path, kCalls, 50));
  const PerCall small = Measure(small_path, 50, kCalls);

  // 50,000 ready jobs and as many delayed, 5,000 reserved, 1,000 done,
  // 100,000 events.
  const std::string big_path = FreshDbPath("big");
  ASSERT_NO_FATAL_FAILURE(Fill(big_path, 50'000, kDefaultMaxEvents));
  SCOPED_TRACE(absl::StrCat("small store: ", Describe(small)));
  {
    SCOPED_TRACE("big store");
    ExpectAboutAsFew(Measure(big_path, kDefaultMaxEvents, kCalls), small);
  }
  ASSERT_NO_FATAL_FAILURE(Analyze(big_path));
  {
    SCOPED_TRACE("big store after ANALYZE");
    ExpectAboutAsFew(Measure(big_path, kDefaultMaxEvents, kCalls), small);
  }
}

}  // namespace
}  // namespace delayq
