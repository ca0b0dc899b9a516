// Copyright delayq authors.
//
// SQLite files as the SQLite store opens them: each input is written to a
// file, opened with OpenSqliteBackend() and read and changed through the
// Backend interface. The seeds are databases the store wrote
// (make_sqlite_seed.cc); the fuzzer damages them.
//
// Properties:
//   - opening, reading (Topics, Stats, List, Get, NextDue, ListSchedules,
//     Limits, PausedTopics) and changing (PromoteDue, Reserve, Ack, Fail,
//     Kick) return values or statuses, never crash, and end (the fuzzer's
//     -timeout catches a call that does not);
//   - a file that OpenSqliteBackend() refuses is left as it was
//     (sqlite_backend.h promises it);
//   - an open error's code is one sqlite_backend.h lists.
// SQLite's heap is capped (sqlite3_hard_heap_limit64) so that a file that
// claims huge sizes cannot take the machine's memory.

#include <sqlite3.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/sqlite_backend.h"
#include "tests/fuzz/fuzz_check.h"

namespace delayq {
namespace {

constexpr int64_t kHeapLimit = int64_t{256} << 20;
// Jobs read or changed per call at most.
constexpr int kMax = 20;

std::string& DbPath() {
  static std::string* path = new std::string;
  return *path;
}

void RemoveFiles(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::remove((path + suffix).c_str());
  }
  // The news folder, if a call made one (it holds only sockets).
  const std::string news = path + "-news";
  std::remove(news.c_str());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

void Exercise(Backend& store) {
  // Times around the seeds' (written at 2026-01-01T00:00:00Z).
  const absl::Time now = absl::FromUnixSeconds(1'767'225'600) + absl::Hours(1);
  absl::StatusOr<std::vector<std::string>> topics = store.Topics();
  std::vector<std::string> names = {"mail"};
  if (topics.ok()) {
    for (size_t i = 0; i < topics->size() && i < 5; ++i) {
      names.push_back((*topics)[i]);
    }
  }
  (void)store.NextDue();
  (void)store.ListSchedules();
  (void)store.Limits();
  (void)store.PausedTopics();
  for (const std::string& topic : names) {
    (void)store.Stats(topic);
    for (JobState state :
         {JobState::kDelayed, JobState::kReady, JobState::kReserved,
          JobState::kDead, JobState::kDone}) {
      absl::StatusOr<std::vector<Job>> jobs = store.List(topic, state, kMax);
      if (!jobs.ok()) continue;
      for (const Job& job : *jobs) (void)store.Get(job.id);
    }
  }
  (void)store.PromoteDue(now, kMax);
  for (const std::string& topic : names) {
    absl::StatusOr<std::vector<Lease>> leases =
        store.Reserve(topic, 3, now, static_cast<ReserveReport*>(nullptr));
    if (!leases.ok()) continue;
    for (size_t i = 0; i < leases->size(); ++i) {
      const Lease& lease = (*leases)[i];
      if (i % 2 == 0) {
        (void)store.Ack(lease.job.id, lease.token, /*result=*/"fuzz", now);
      } else {
        (void)store.Fail(lease.job.id, lease.token, "fuzz", now, now);
      }
    }
    (void)store.Kick(topic, kMax, now);
  }
}

bool ListedOpenError(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kResourceExhausted:
      return true;
    default:
      return false;
  }
}

}  // namespace
}  // namespace delayq

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc, (void)argv;
  sqlite3_hard_heap_limit64(delayq::kHeapLimit);
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp",
                                 "/sqlite_fuzz.XXXXXX");
  FUZZ_CHECK(mkdtemp(dir.data()) != nullptr, "mkdtemp ", dir);
  delayq::DbPath() = dir + "/fuzz.db";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace delayq;  // NOLINT: the entry point is outside the namespace
  if (DbPath().empty()) LLVMFuzzerInitialize(nullptr, nullptr);
  const std::string& path = DbPath();
  RemoveFiles(path);
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), bytes.size());
    FUZZ_CHECK(out.good(), "cannot write ", path);
  }
  SqliteOptions options;
  options.path = path;
  options.busy_timeout = absl::Milliseconds(100);
  absl::StatusOr<std::unique_ptr<Backend>> store = OpenSqliteBackend(options);
  if (!store.ok()) {
    FUZZ_CHECK(ListedOpenError(store.status().code()),
               "OpenSqliteBackend() said ", store.status().ToString());
    FUZZ_CHECK(ReadFile(path) == bytes,
               "OpenSqliteBackend() refused the "
               "file (",
               store.status().ToString(), ") but changed it");
  } else {
    Exercise(**store);
    store->reset();
  }
  RemoveFiles(path);
  return 0;
}
