// Copyright delayq authors.
//
// A helper process for the multi-process and crash tests of the SQLite
// backend. It writes what it did as lines of text, each written only after
// the call it reports returned:
//   P id                         Add() of job `id` returned OK
//   R id token now_us deadline_us  Reserve() leased `id`
//   I id token                   about to call Ack() (churn mode)
//   A id token code              Ack() returned `code` (0 = OK)
//
// Usage:
//   sqlite_worker work PATH OUT_PREFIX THREADS JOBS_PER_THREAD TOPICS TAG
//     THREADS threads, each with its own connection, produce
//     JOBS_PER_THREAD jobs over TOPICS topics and consume from the same
//     topics; now and then a consumer holds a lease past its ttr, so the job
//     is delivered again and the late Ack must be refused. Thread i writes to
//     OUT_PREFIX.i. Exits when its jobs are produced and the topics stayed
//     empty for a while.
//   sqlite_worker churn PATH TAG
//     Enqueues, reserves and acks forever, reporting on stdout, until killed.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "delayq/sqlite_backend.h"

namespace delayq {
namespace {

constexpr absl::Duration kTtr = absl::Milliseconds(300);

std::unique_ptr<Backend> OpenOrDie(const std::string& path) {
  SqliteOptions options;
  options.path = path;
  options.busy_timeout = absl::Seconds(30);
  auto backend = OpenSqliteBackend(options);
  if (!backend.ok()) {
    std::fprintf(stderr, "open: %s\n", backend.status().ToString().c_str());
    std::exit(2);
  }
  return *std::move(backend);
}

void Die(const absl::Status& status, const char* what) {
  std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
  std::exit(3);
}

// Writes `line` with one write(2), so a kill never leaves half a line.
void Emit(int fd, const std::string& line) {
  const std::string text = line + "\n";
  if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    std::exit(4);
}

NewJob MakeJob(const std::string& id, const std::string& topic,
               absl::Time now) {
  NewJob job;
  job.id = id;
  job.topic = topic;
  job.payload = "payload of " + id;
  job.run_at = now;
  job.ttr = kTtr;
  job.max_attempts = 1000;  // redeliveries must never kill a job here
  return job;
}

void Consume(Backend* backend, const std::string& topic, int fd,
             std::mt19937* rng, bool* got) {
  const absl::Time now = absl::Now();
  auto leases = backend->Reserve(topic, 1 + (*rng)() % 3, now);
  if (!leases.ok()) Die(leases.status(), "reserve");
  *got = !leases->empty();
  for (const Lease& lease : *leases) {
    Emit(fd, absl::StrCat("R ", lease.job.id, " ", lease.token, " ",
                          absl::ToUnixMicros(now), " ",
                          absl::ToUnixMicros(lease.deadline)));
  }
  for (const Lease& lease : *leases) {
    if ((*rng)() % 50 == 0) {
      // Hold it past its ttr: another consumer may take the job over.
      absl::SleepFor(kTtr + absl::Milliseconds(50));
    }
    const absl::Status acked =
        backend->Ack(lease.job.id, lease.token, absl::Now());
    if (!acked.ok() && !absl::IsFailedPrecondition(acked)) Die(acked, "ack");
    Emit(fd, absl::StrCat("A ", lease.job.id, " ", lease.token, " ",
                          static_cast<int>(acked.code())));
  }
}

int Work(const std::string& path, const std::string& out_prefix, int threads,
         int jobs_per_thread, int topics, const std::string& tag) {
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::unique_ptr<Backend> backend = OpenOrDie(path);
      const std::string out = absl::StrCat(out_prefix, ".", t);
      FILE* f = std::fopen(out.c_str(), "w");
      if (f == nullptr) std::exit(5);
      const int fd = fileno(f);
      std::mt19937 rng(std::hash<std::string>()(tag) + t);
      int produced = 0;
      int idle = 0;
      while (produced < jobs_per_thread || idle < 20) {
        if (produced < jobs_per_thread && rng() % 2 == 0) {
          const std::string id = absl::StrCat(tag, "-", t, "-", produced);
          const std::string topic = absl::StrCat("mp", rng() % topics);
          const absl::Status added =
              backend->Add({MakeJob(id, topic, absl::Now())}, absl::Now());
          if (!added.ok()) Die(added, "add");
          Emit(fd, "P " + id);
          ++produced;
          continue;
        }
        bool got = false;
        Consume(backend.get(), absl::StrCat("mp", rng() % topics), fd, &rng,
                &got);
        if (produced == jobs_per_thread) {
          idle = got ? 0 : idle + 1;
          if (!got) absl::SleepFor(absl::Milliseconds(5));
        }
      }
      std::fclose(f);
    });
  }
  for (auto& w : workers) w.join();
  return 0;
}

int Churn(const std::string& path, const std::string& tag) {
  std::unique_ptr<Backend> backend = OpenOrDie(path);
  std::mt19937 rng(std::hash<std::string>()(tag));
  const int fd = STDOUT_FILENO;
  for (int i = 0;; ++i) {
    const absl::Time now = absl::Now();
    const int batch = 1 + rng() % 20;
    std::vector<NewJob> jobs;
    for (int j = 0; j < batch; ++j) {
      jobs.push_back(MakeJob(absl::StrCat(tag, "-", i, "-", j), "crash", now));
      jobs.back().ttr = absl::Seconds(1);
    }
    const absl::Status added = backend->Add(jobs, now);
    if (!added.ok()) Die(added, "add");
    for (const NewJob& job : jobs) Emit(fd, "P " + job.id);
    auto leases = backend->Reserve("crash", 1 + rng() % 20, now);
    if (!leases.ok()) Die(leases.status(), "reserve");
    for (const Lease& lease : *leases) {
      Emit(fd, absl::StrCat("R ", lease.job.id, " ", lease.token, " ",
                            absl::ToUnixMicros(now), " ",
                            absl::ToUnixMicros(lease.deadline)));
      if (rng() % 4 == 0) continue;  // left reserved: the lease must expire
      // A kill between this line and the next leaves the job either way.
      Emit(fd, absl::StrCat("I ", lease.job.id, " ", lease.token));
      const absl::Status acked = backend->Ack(lease.job.id, lease.token, now);
      if (!acked.ok()) Die(acked, "ack");
      Emit(fd, absl::StrCat("A ", lease.job.id, " ", lease.token, " 0"));
    }
  }
}

}  // namespace
}  // namespace delayq

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "work" && argc == 8) {
    return delayq::Work(argv[2], argv[3], std::atoi(argv[4]),
                        std::atoi(argv[5]), std::atoi(argv[6]), argv[7]);
  }
  if (mode == "churn" && argc == 4) return delayq::Churn(argv[2], argv[3]);
  std::fprintf(stderr, "usage: see the top of sqlite_worker.cc\n");
  return 1;
}
