// Copyright delayq authors.
//
// Throughput of the SQLite backend from one thread, each benchmark on a fresh
// file. The first argument is the durability, synchronous=NORMAL (0) or FULL
// (1); the second the page size of the file (1024 is the default, 4096
// SQLite's usual size):
//   BM_EnqueueSingle    one Add() per job
//   BM_EnqueueBatch     one Add() per batch of range(2) jobs
//   BM_ReserveAck       Reserve(1) + Ack() of pre-filled jobs
//   BM_Ack              Ack() alone of jobs reserved beforehand; the third
//                       argument is the jobs' keep_for in seconds (0: none;
//                       else kept done with a 16-byte result, their topic
//                       keeping at most 1,000)
//   BM_Lifecycle        Add() + Reserve(1) + Ack() per job
//   BM_FileSize         1,000,000 jobs enqueued in batches; reports the file
//                       size per job (counter bytes_per_job)
// Run with -c opt: bazel run -c opt //bench:sqlite_bench

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "delayq/sqlite_backend.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);
const std::string kPayload(64, 'p');

// A fresh database file in a scratch directory, deleted with its WAL files.
class ScratchDb {
 public:
  ScratchDb() {
    dir_ = testing::MakeTempDir("dq-bench");
    path_ = dir_ + "/bench.db";
  }
  ~ScratchDb() {
    for (const char* suffix : {"", "-wal", "-shm"}) {
      unlink((path_ + suffix).c_str());
    }
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

std::unique_ptr<Backend> Open(const std::string& path,
                              const benchmark::State& state) {
  SqliteOptions options;
  options.path = path;
  options.durability = state.range(0) == 0 ? SqliteOptions::Durability::kNormal
                                           : SqliteOptions::Durability::kFull;
  options.page_size = static_cast<int>(state.range(1));
  auto backend = OpenSqliteBackend(options);
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", backend.status().ToString().c_str());
    std::abort();
  }
  return *std::move(backend);
}

NewJob MakeJob(int64_t n) {
  NewJob job;
  job.id = absl::StrCat("job-", n);
  job.topic = "bench";
  job.payload = kPayload;
  job.run_at = kNow;
  return job;
}

void Check(const absl::Status& status, benchmark::State& state) {
  if (!status.ok()) state.SkipWithError(status.ToString().c_str());
}

void SetLabel(benchmark::State& state) {
  state.SetLabel(absl::StrCat(state.range(0) == 0 ? "sync=normal" : "sync=full",
                              " page=", state.range(1)));
}

// Both durabilities, each with both page sizes.
void DurabilityAndPageSize(benchmark::internal::Benchmark* b) {
  for (int64_t sync : {0, 1}) {
    for (int64_t page : {1024, 4096}) b->Args({sync, page});
  }
}

void BM_EnqueueSingle(benchmark::State& state) {
  ScratchDb db;
  auto backend = Open(db.path(), state);
  int64_t n = 0;
  for (auto _ : state) {
    NewJob job = MakeJob(n++);
    Check(backend->Add({job}, kNow), state);
  }
  state.SetItemsProcessed(n);
  SetLabel(state);
}
BENCHMARK(BM_EnqueueSingle)
    ->Apply(DurabilityAndPageSize)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// What counting (delayq/counts.h) costs one enqueue: counts on (1) and off
// (0), at the default durability and page size.
void BM_EnqueueCounted(benchmark::State& state) {
  ScratchDb db;
  SqliteOptions options;
  options.path = db.path();
  options.counts.enabled = state.range(0) != 0;
  auto backend = OpenSqliteBackend(options);
  if (!backend.ok()) {
    state.SkipWithError(backend.status().ToString().c_str());
    return;
  }
  int64_t n = 0;
  for (auto _ : state) {
    NewJob job = MakeJob(n++);
    Check((*backend)->Add({job}, kNow), state);
  }
  state.SetItemsProcessed(n);
  state.SetLabel(options.counts.enabled ? "counts=on" : "counts=off");
}
BENCHMARK(BM_EnqueueCounted)
    ->Arg(1)
    ->Arg(0)
    ->Arg(1)
    ->Arg(0)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_EnqueueBatch(benchmark::State& state) {
  ScratchDb db;
  auto backend = Open(db.path(), state);
  const int batch = static_cast<int>(state.range(2));
  int64_t n = 0;
  std::vector<NewJob> jobs(batch);
  for (auto _ : state) {
    state.PauseTiming();
    for (int i = 0; i < batch; ++i) jobs[i] = MakeJob(n++);
    state.ResumeTiming();
    Check(backend->Add(jobs, kNow), state);
  }
  state.SetItemsProcessed(n);
  SetLabel(state);
}
BENCHMARK(BM_EnqueueBatch)
    ->Args({0, 1024, 100})
    ->Args({0, 1024, 1000})
    ->Args({0, 4096, 1000})
    ->Args({1, 1024, 100})
    ->Args({1, 1024, 1000})
    ->Args({1, 4096, 1000})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_ReserveAck(benchmark::State& state) {
  ScratchDb db;
  auto backend = Open(db.path(), state);
  int64_t added = 0, done = 0;
  std::vector<NewJob> jobs;
  for (auto _ : state) {
    if (done == added) {
      // Refill outside the measurement.
      state.PauseTiming();
      jobs.clear();
      for (int i = 0; i < 10000; ++i) jobs.push_back(MakeJob(added++));
      Check(backend->Add(jobs, kNow), state);
      state.ResumeTiming();
    }
    auto leases = backend->Reserve("bench", 1, kNow);
    if (!leases.ok() || leases->size() != 1) {
      state.SkipWithError("reserve failed");
      break;
    }
    const Lease& lease = (*leases)[0];
    Check(backend->Ack(lease.job.id, lease.token, /*result=*/"", kNow), state);
    ++done;
  }
  state.SetItemsProcessed(done);
  SetLabel(state);
}
BENCHMARK(BM_ReserveAck)
    ->Apply(DurabilityAndPageSize)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// Reserve + ack of one job at a time by several threads of one process on
// one store: W1's consumers without the scheduler. The threads' writes
// share transactions (backends/sqlite/internal/group_commit.h).
void BM_ReserveAckThreads(benchmark::State& state) {
  static ScratchDb* db = nullptr;
  static std::unique_ptr<Backend>* backend = nullptr;
  if (state.thread_index() == 0) {
    db = new ScratchDb();
    backend = new std::unique_ptr<Backend>(Open(db->path(), state));
    std::vector<NewJob> jobs;
    for (int64_t i = 0; i < state.max_iterations * state.threads(); ++i) {
      jobs.push_back(MakeJob(i));
    }
    Check((*backend)->Add(jobs, kNow), state);
  }
  // The store is read inside the loop only: its threads start together,
  // after thread 0 made it.
  for (auto _ : state) {
    auto leases = (*backend)->Reserve("bench", 1, kNow);
    if (!leases.ok() || leases->size() != 1) {
      state.SkipWithError("reserve failed");
      break;
    }
    const Lease& lease = (*leases)[0];
    Check((*backend)->Ack(lease.job.id, lease.token, /*result=*/"", kNow),
          state);
  }
  state.SetItemsProcessed(state.iterations());
  SetLabel(state);
  if (state.thread_index() == 0) {
    delete backend;
    delete db;
  }
}
BENCHMARK(BM_ReserveAckThreads)
    ->Args({0, 1024})
    ->Iterations(2000)
    ->Threads(1)
    ->Threads(8)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_Ack(benchmark::State& state) {
  ScratchDb db;
  auto backend = Open(db.path(), state);
  const absl::Duration keep_for = absl::Seconds(state.range(2));
  const std::string result(16, 'r');
  int64_t added = 0, done = 0;
  std::vector<Lease> leases;
  size_t next = 0;
  for (auto _ : state) {
    if (next == leases.size()) {
      // Refill and reserve outside the measurement.
      state.PauseTiming();
      std::vector<NewJob> jobs;
      for (int i = 0; i < 1000; ++i) {
        jobs.push_back(MakeJob(added++));
        jobs.back().keep_for = keep_for;
        jobs.back().keep_at_most = 1000;
      }
      Check(backend->Add(jobs, kNow), state);
      auto reserved = backend->Reserve("bench", 1000, kNow);
      if (!reserved.ok() || reserved->size() != 1000) {
        state.SkipWithError("reserve failed");
        break;
      }
      leases = *std::move(reserved);
      next = 0;
      state.ResumeTiming();
    }
    const Lease& lease = leases[next++];
    Check(backend->Ack(lease.job.id, lease.token, result, kNow), state);
    ++done;
  }
  state.SetItemsProcessed(done);
  state.SetLabel(absl::StrCat(state.range(0) == 0 ? "sync=normal" : "sync=full",
                              " page=", state.range(1),
                              " keep_for=", state.range(2), "s"));
}
BENCHMARK(BM_Ack)
    ->Args({0, 1024, 0})
    ->Args({0, 1024, 3600})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_Lifecycle(benchmark::State& state) {
  ScratchDb db;
  auto backend = Open(db.path(), state);
  int64_t n = 0;
  for (auto _ : state) {
    NewJob job = MakeJob(n++);
    Check(backend->Add({job}, kNow), state);
    auto leases = backend->Reserve("bench", 1, kNow);
    if (!leases.ok() || leases->size() != 1) {
      state.SkipWithError("reserve failed");
      break;
    }
    Check(backend->Ack((*leases)[0].job.id, (*leases)[0].token, /*result=*/"",
                       kNow),
          state);
  }
  state.SetItemsProcessed(n);
  SetLabel(state);
}
BENCHMARK(BM_Lifecycle)
    ->Apply(DurabilityAndPageSize)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_FileSize(benchmark::State& state) {
  constexpr int64_t kJobs = 1'000'000;
  constexpr int kBatch = 1000;
  double bytes_per_job = 0;
  for (auto _ : state) {
    ScratchDb db;
    {
      auto backend = Open(db.path(), state);
      std::vector<NewJob> jobs(kBatch);
      for (int64_t n = 0; n < kJobs; n += kBatch) {
        for (int i = 0; i < kBatch; ++i) jobs[i] = MakeJob(n + i);
        Check(backend->Add(jobs, kNow), state);
      }
    }  // closing the last connection checkpoints the WAL into the file
    struct stat st;
    stat(db.path().c_str(), &st);
    bytes_per_job = static_cast<double>(st.st_size) / kJobs;
  }
  state.counters["bytes_per_job"] = bytes_per_job;
  state.counters["payload_bytes"] = static_cast<double>(kPayload.size());
  state.SetItemsProcessed(state.iterations() * kJobs);
  SetLabel(state);
}
BENCHMARK(BM_FileSize)
    ->Args({0, 1024})
    ->Args({0, 4096})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace delayq
