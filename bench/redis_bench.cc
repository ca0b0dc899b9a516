// Copyright delayq authors.
//
// Redis backend throughput: enqueue (single and batched) and reserve + ack
// (single call and batched) with 1 and 8 threads. Starts its own
// redis-server (no persistence) on a free loopback port and a Unix socket;
// the second argument of each benchmark picks the transport (0 TCP loopback,
// 1 the Unix socket).
//
//   bazel run -c opt //bench:redis_bench
//
// Every iteration is one round trip: Add() is one script call, Reserve() one,
// Ack() one, and AckBatch() one. items_per_second counts jobs. One process
// drives every benchmark (its threads share one store object).

#include <hiredis/hiredis.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "backends/redis/backend_impl.h"
#include "bench/redis_cpu.h"
#include "benchmark/benchmark.h"
#include "tests/testing/redis_server.h"

namespace delayq {
namespace {

int g_port = 0;
std::string g_socket;
std::atomic<int> g_run{0};

// A store under a namespace no earlier run used, reached over TCP (0) or
// the Unix socket (1) as the benchmark's second argument says.
std::unique_ptr<RedisBackend> OpenFresh(const benchmark::State& state) {
  RedisOptions options;
  options.port = g_port;
  if (state.range(1) == 1) options.unix_socket = g_socket;
  options.ns = absl::StrCat("bench", g_run.fetch_add(1));
  auto backend = RedisBackend::Open(options);
  if (!backend.ok()) {
    fprintf(stderr, "open: %s\n", backend.status().ToString().c_str());
    abort();
  }
  return std::move(*backend);
}

NewJob MakeJob(std::string id, absl::Time now) {
  NewJob j;
  j.id = std::move(id);
  j.topic = "bench";
  j.payload = std::string(64, 'x');
  j.run_at = now;
  return j;
}

// CPU seconds the server has used: the benchmarks report it per job, since
// on a machine this small the server's CPU per job, not the round trip,
// decides the throughput of many threads.
double ServerCpuSeconds() {
  return bench::RedisCpuSeconds("127.0.0.1", g_port);
}

void Check(const absl::Status& s) {
  if (!s.ok()) {
    fprintf(stderr, "%s\n", s.ToString().c_str());
    abort();
  }
}

// Runs one command on the server; its reply, or "" on any error.
std::string ServerCommand(const char* command) {
  std::string out;
  redisContext* c = redisConnect("127.0.0.1", g_port);
  if (c != nullptr && c->err == 0) {
    auto* r = static_cast<redisReply*>(redisCommand(c, command));
    if (r != nullptr && r->str != nullptr) out.assign(r->str, r->len);
    if (r != nullptr) freeReplyObject(r);
  }
  if (c != nullptr) redisFree(c);
  return out;
}

// The server's mean time per EVALSHA since the last CONFIG RESETSTAT (µs),
// or -1: the scripts' own time, without the round trip or the server's
// other work.
double EvalshaMicrosPerCall() {
  const std::string stats = ServerCommand("INFO commandstats");
  for (absl::string_view line : absl::StrSplit(stats, '\n')) {
    if (!absl::ConsumePrefix(&line, "cmdstat_evalsha:")) continue;
    for (absl::string_view field : absl::StrSplit(line, ',')) {
      double v = 0;
      if (absl::ConsumePrefix(&field, "usec_per_call=") &&
          absl::SimpleAtod(absl::StripAsciiWhitespace(field), &v)) {
        return v;
      }
    }
  }
  return -1;
}

// Shared by the threads of one run; made by thread 0 before the timed loop
// (the other threads wait for it at the loop's start barrier).
std::unique_ptr<RedisBackend> g_backend;
std::atomic<int64_t> g_next_id{0};

// Thread 0 measures around the timed loop of all threads: it starts before
// the loop's start barrier and reports after its stop barrier, so the span
// covers every thread's iterations.
double g_cpu_start = 0;
absl::Time g_wall_start;

void StartMeasures(const benchmark::State& state) {
  if (state.thread_index() != 0) return;
  g_cpu_start = ServerCpuSeconds();
  g_wall_start = absl::Now();
}

// `jobs`: by all threads. items_per_second divides by the threads' mean
// time; wall_jobs_per_s divides by the whole span, which the slowest thread
// sets.
void ReportMeasures(benchmark::State& state, int64_t jobs) {
  if (state.thread_index() != 0 || jobs == 0) return;
  const double wall = absl::ToDoubleSeconds(absl::Now() - g_wall_start);
  state.counters["wall_jobs_per_s"] = static_cast<double>(jobs) / wall;
  state.counters["server_us_per_job"] =
      (ServerCpuSeconds() - g_cpu_start) * 1e6 / static_cast<double>(jobs);
}

void BM_Enqueue(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  if (state.thread_index() == 0) g_backend = OpenFresh(state);
  StartMeasures(state);
  for (auto _ : state) {
    std::vector<NewJob> jobs;
    const absl::Time now = absl::Now();
    for (int i = 0; i < batch; ++i) {
      jobs.push_back(MakeJob(absl::StrCat("j", g_next_id.fetch_add(1)), now));
    }
    Check(g_backend->Add(jobs, now));
  }
  state.SetItemsProcessed(state.iterations() * batch);
  ReportMeasures(state, state.iterations() * batch * state.threads());
  if (state.thread_index() == 0) state.counters["batch"] = batch;
  state.SetLabel(state.range(1) == 0 ? "tcp" : "unix");
}
BENCHMARK(BM_Enqueue)->Args({1, 0})->Iterations(10000)->UseRealTime();
BENCHMARK(BM_Enqueue)->Args({100, 0})->Iterations(500)->UseRealTime();
BENCHMARK(BM_Enqueue)->Args({100, 1})->Iterations(500)->UseRealTime();
BENCHMARK(BM_Enqueue)->Args({1000, 0})->Iterations(100)->UseRealTime();
BENCHMARK(BM_Enqueue)
    ->Args({100, 0})
    ->Iterations(200)
    ->Threads(8)
    ->UseRealTime();
BENCHMARK(BM_Enqueue)
    ->Args({1, 0})
    ->Iterations(4000)
    ->Threads(8)
    ->UseRealTime();
BENCHMARK(BM_Enqueue)
    ->Args({1, 1})
    ->Iterations(4000)
    ->Threads(8)
    ->UseRealTime();

// Reserve + ack: `batch` = 1 is one Reserve() and one Ack() per job;
// `batch` > 1 reserves that many in one script call and acks them in one
// pipeline.
constexpr int kReserveIterations = 1500;

void BM_ReserveAck(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  if (state.thread_index() == 0) {
    g_backend = OpenFresh(state);
    const int64_t total = int64_t{kReserveIterations} * state.threads() * batch;
    // All due at once, but each call with the time it is made: the store
    // refuses a `now` older than its clock-skew allowance.
    const absl::Time due = absl::Now();
    std::vector<NewJob> jobs;
    for (int64_t i = 0; i < total; ++i) {
      jobs.push_back(MakeJob(absl::StrCat("r", i), due));
      if (jobs.size() == 1000 || i + 1 == total) {
        Check(g_backend->Add(jobs, absl::Now()));
        jobs.clear();
      }
    }
  }
  int64_t done = 0;
  StartMeasures(state);
  for (auto _ : state) {
    const absl::Time now = absl::Now();
    auto leases = g_backend->Reserve("bench", batch, now);
    Check(leases.status());
    if (static_cast<int>(leases->size()) != batch) {
      state.SkipWithError("store ran dry");
      break;
    }
    if (batch == 1) {
      Check(g_backend->Ack((*leases)[0].job.id, (*leases)[0].token,
                           /*result=*/"", now));
    } else {
      auto acks = g_backend->AckBatch(*leases, now);
      Check(acks.status());
      for (const absl::Status& s : *acks) Check(s);
    }
    done += batch;
  }
  state.SetItemsProcessed(done);
  ReportMeasures(state, done * state.threads());
  if (state.thread_index() == 0) state.counters["batch"] = batch;
  state.SetLabel(state.range(1) == 0 ? "tcp" : "unix");
}
BENCHMARK(BM_ReserveAck)
    ->ArgsProduct({{1}, {0, 1}})
    ->Iterations(kReserveIterations)
    ->Threads(1)
    ->Threads(8)
    ->UseRealTime();
BENCHMARK(BM_ReserveAck)
    ->ArgsProduct({{50}, {0, 1}})
    ->Iterations(kReserveIterations / 10)
    ->Threads(1)
    ->Threads(8)
    ->UseRealTime();

// Ack alone, one call per job, one thread: every job is reserved before the
// timed loop, so the time and server_us_per_job are the ack's, and
// ack_script_us is the server's mean time in the ack script. The
// first argument keeps the jobs done after their ack (1: keep_for one hour,
// the topic keeping up to kMaxDonePerTopic) or lets them go (0).
constexpr int kAckIterations = 5000;

void BM_Ack(benchmark::State& state) {
  const bool keep = state.range(0) == 1;
  g_backend = OpenFresh(state);
  const absl::Time due = absl::Now();
  std::vector<NewJob> jobs;
  for (int i = 0; i < kAckIterations; ++i) {
    NewJob job = MakeJob(absl::StrCat("a", i), due);
    if (keep) {
      job.keep_for = absl::Hours(1);
      job.keep_at_most = kMaxDonePerTopic;
    }
    jobs.push_back(std::move(job));
    if (jobs.size() == 1000) {
      Check(g_backend->Add(jobs, absl::Now()));
      jobs.clear();
    }
  }
  std::vector<Lease> leases;
  while (static_cast<int>(leases.size()) < kAckIterations) {
    auto got = g_backend->Reserve("bench", 1000, absl::Now());
    Check(got.status());
    if (got->empty()) {
      state.SkipWithError("store ran dry");
      return;
    }
    for (Lease& l : *got) leases.push_back(std::move(l));
  }
  size_t next = 0;
  ServerCommand("CONFIG RESETSTAT");
  StartMeasures(state);
  for (auto _ : state) {
    const Lease& l = leases[next++];
    Check(g_backend->Ack(l.job.id, l.token, /*result=*/"", absl::Now()));
  }
  state.SetItemsProcessed(static_cast<int64_t>(next));
  ReportMeasures(state, static_cast<int64_t>(next));
  // Only acks ran since the reset: the ack script's own time.
  state.counters["ack_script_us"] = EvalshaMicrosPerCall();
  state.SetLabel(absl::StrCat(state.range(1) == 0 ? "tcp" : "unix",
                              keep ? " keep_for" : ""));
}
BENCHMARK(BM_Ack)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->Iterations(kAckIterations)
    ->UseRealTime();

}  // namespace
}  // namespace delayq

int main(int argc, char** argv) {
  auto server = delayq::testing::RedisServer::Start();
  if (!server.ok()) {
    fprintf(stderr, "redis-server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  delayq::g_port = (*server)->port();
  delayq::g_socket = (*server)->socket_path();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  delayq::g_backend.reset();
  // Server-side cost per script call, to tell server time from round trips.
  redisContext* c = redisConnect("127.0.0.1", delayq::g_port);
  if (c != nullptr && c->err == 0) {
    auto* r = static_cast<redisReply*>(redisCommand(c, "INFO commandstats"));
    if (r != nullptr && r->str != nullptr) {
      for (absl::string_view line :
           absl::StrSplit(absl::string_view(r->str, r->len), '\n')) {
        if (absl::StartsWith(line, "cmdstat_evalsha") ||
            absl::StartsWith(line, "cmdstat_eval:")) {
          printf("server %.*s\n", static_cast<int>(line.size()), line.data());
        }
      }
    }
    if (r != nullptr) freeReplyObject(r);
  }
  if (c != nullptr) redisFree(c);
  return 0;
}
