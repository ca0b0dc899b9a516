// Copyright delayq authors.
//
// `delayq serve` over loopback beside the library it wraps: add, and
// reserve + ack, jobs/s with 1 and 16 keep-alive clients, on SQLite and
// Redis, one job per request and 100 per request (a batch add; reserve of
// up to 100 and one ack request for them; with one job per request also
// each ack carrying "next", the next lease in its reply), and the server's
// CPU per job (its process_cpu_seconds_total metric) beside the library's
// CPU per job (getrusage) for the same calls. The server runs in a process of
// its own, as deployed; the library figures are one process, under the same
// runtime policy as the server (tools/runtime_policy.h). With one job per
// request it also measures the floor: requests the server answers without
// a store call, and the same against a bare server that only reads
// requests and writes a reply (bare_reply_server.h).
//
//   bazel run -c opt //bench:serve_bench -- [--jobs N] [--batch N]
//       [--store sqlite|redis] [--clients 1|16] [--server-arg ARG]...
//
// One JSON object per line.

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/redis_cpu.h"
#include "bench/serve/bare_reply_server.h"
#include "bench/serve/lean_client.h"
#include "delayq/delayq.h"
#include "tests/serve/serve_process.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/temp_path.h"
#include "tools/common/runtime_policy.h"

namespace delayq {
namespace {

using testing::ApiClient;
using testing::Json;

// CPU seconds (user + system) the server has used, from its /metrics.
double ServerCpuSeconds(ApiClient& api) {
  const std::string text = api.Get("/metrics").body;
  const std::string name = "\nprocess_cpu_seconds_total ";
  const size_t at = text.find(name);
  double seconds = 0;
  if (at == std::string::npos ||
      !absl::SimpleAtod(text.substr(at + name.size(),
                                    text.find('\n', at + 1) - at - name.size()),
                        &seconds)) {
    absl::FPrintF(stderr, "the server's metrics have no CPU time\n");
  }
  return seconds;
}

double SelfCpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec / 1e6;
}

// Runs `work(client_index)` on `clients` threads; returns the seconds taken.
double Parallel(int clients, const std::function<void(int)>& work) {
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) threads.emplace_back(work, c);
  for (std::thread& t : threads) t.join();
  return absl::ToDoubleSeconds(absl::Now() - start);
}

// One run's shape: the store, HTTP or the library, clients, jobs per call.
struct Shape {
  std::string store;
  std::string via;
  int clients = 1;
  int batch = 1;
  int redis_port = 0;  // the store's redis-server, 0 for SQLite
};

// The CPU the store's own server has used (0 for SQLite, which runs in the
// process measured).
double StoreCpuSeconds(const Shape& shape) {
  return shape.redis_port == 0
             ? 0
             : bench::RedisCpuSeconds("127.0.0.1", shape.redis_port);
}

// `cpu_seconds`: the server's (HTTP) or this process's (library);
// `store_cpu_seconds`: redis-server's; `client_cpu_seconds`: over HTTP,
// this process's (its clients, which share the machine with the server and
// redis-server), and not reported when negative.
void Report(const Shape& shape, const std::string& op, int jobs, double seconds,
            double cpu_seconds, double store_cpu_seconds, int requests,
            double client_cpu_seconds = -1) {
  const double per_job = 1e6 / std::max(jobs, 1);
  const std::string client =
      client_cpu_seconds < 0
          ? ""
          : absl::StrFormat(",\"client_cpu_us_per_job\":%.2f",
                            client_cpu_seconds * per_job);
  absl::PrintF(
      "{\"bench\":\"serve\",\"store\":\"%s\",\"via\":\"%s\",\"op\":\"%s\","
      "\"clients\":%d,\"batch\":%d,\"jobs\":%d,\"jobs_per_s\":%.0f,"
      "\"cpu_us_per_job\":%.2f,\"store_cpu_us_per_job\":%.2f,"
      "\"cpu_us_per_request\":%.1f%s}\n",
      shape.store, shape.via, op, shape.clients, shape.batch, jobs,
      jobs / seconds, cpu_seconds * per_job, store_cpu_seconds * per_job,
      cpu_seconds * 1e6 / std::max(requests, 1), client);
  std::fflush(stdout);
}

// `batch` payloads.
std::vector<std::string> Payloads(int batch) {
  return std::vector<std::string>(batch, "0123456789");
}

// Adds `jobs` jobs in calls of shape.batch, over shape.clients clients.
void HttpAdd(const Shape& shape, int port, const std::string& topic, int jobs) {
  ApiClient meter(port);
  const double cpu = ServerCpuSeconds(meter);
  const double store_cpu = StoreCpuSeconds(shape);
  const double client_cpu = SelfCpuSeconds();
  std::atomic<int> requests{0};
  const std::string body =
      (shape.batch == 1 ? Json{{"payload", "0123456789"}}
                        : Json{{"payloads", Payloads(shape.batch)}})
          .dump();
  const std::string path = absl::StrCat("/v1/topics/", topic, "/jobs",
                                        shape.batch == 1 ? "" : "/batch");
  const int calls = jobs / shape.batch;
  const double seconds = Parallel(shape.clients, [&](int c) {
    bench::LeanClient api(port);
    std::string reply;
    for (int i = c; i < calls; i += shape.clients) {
      api.Post(path, body, &reply);
      ++requests;
    }
  });
  const double client_used = SelfCpuSeconds() - client_cpu;
  Report(shape, "add", calls * shape.batch, seconds,
         ServerCpuSeconds(meter) - cpu, StoreCpuSeconds(shape) - store_cpu,
         requests.load(), client_used);
}

// The body of an ack request for `leases` (job id, token): a lease's own
// ack (`one`: /v1/jobs/ID/ack), or the list of them (/v1/leases/ack), which
// a reserve of many may answer with a single lease too.
std::string AckBody(const bench::LeaseIds& leases, bool one) {
  if (one) return absl::StrCat("{\"token\":\"", leases[0].second, "\"}");
  return absl::StrCat(
      "{\"leases\":[",
      absl::StrJoin(leases, ",",
                    [](std::string* out, const auto& lease) {
                      absl::StrAppend(out, "{\"id\":\"", lease.first,
                                      "\",\"token\":\"", lease.second, "\"}");
                    }),
      "]}");
}

// Reserves up to shape.batch jobs at a time and acks them (one request
// per lease, or one for all of them), until the topic is empty.
void HttpReserveAck(const Shape& shape, int port, const std::string& topic) {
  ApiClient meter(port);
  const double cpu = ServerCpuSeconds(meter);
  const double store_cpu = StoreCpuSeconds(shape);
  const double client_cpu = SelfCpuSeconds();
  std::atomic<int> done{0}, requests{0};
  const std::string reserve_path = "/v1/topics/" + topic + "/reserve";
  const std::string reserve_body = Json{{"max", shape.batch}}.dump();
  const double seconds = Parallel(shape.clients, [&](int) {
    bench::LeanClient api(port);
    std::string reply;
    for (;;) {
      const int status = api.Post(reserve_path, reserve_body, &reply);
      ++requests;
      const bench::LeaseIds leases = bench::LeasesIn(reply);
      if (status != 200 || leases.empty()) return;
      api.Post(shape.batch == 1
                   ? absl::StrCat("/v1/jobs/", leases[0].first, "/ack")
                   : std::string("/v1/leases/ack"),
               AckBody(leases, shape.batch == 1), &reply);
      ++requests;
      done += static_cast<int>(leases.size());
    }
  });
  const double client_used = SelfCpuSeconds() - client_cpu;
  Report(shape, "reserve+ack", done.load(), seconds,
         ServerCpuSeconds(meter) - cpu, StoreCpuSeconds(shape) - store_cpu,
         requests.load(), client_used);
}

// One job per request, as a one-at-a-time worker with the combined call
// works: one reserve, then each ack carries "next" and its reply the next
// lease, until the topic is empty.
void HttpAckWithNext(const Shape& shape, int port, const std::string& topic) {
  ApiClient meter(port);
  const double cpu = ServerCpuSeconds(meter);
  const double store_cpu = StoreCpuSeconds(shape);
  const double client_cpu = SelfCpuSeconds();
  std::atomic<int> done{0}, requests{0};
  const std::string next =
      absl::StrCat(",\"next\":{\"topic\":\"", topic, "\"}}");
  const double seconds = Parallel(shape.clients, [&](int) {
    bench::LeanClient api(port);
    std::string reply;
    int status = api.Post("/v1/topics/" + topic + "/reserve", "{}", &reply);
    ++requests;
    bench::LeaseIds leases = bench::LeasesIn(reply);
    while (status == 200 && !leases.empty()) {
      std::string body = AckBody(leases, /*one=*/true);
      body.pop_back();  // the closing brace: "next" goes before it
      status = api.Post(absl::StrCat("/v1/jobs/", leases[0].first, "/ack"),
                        body + next, &reply);
      ++requests;
      if (status == 200) ++done;
      leases = bench::LeasesIn(reply);
    }
  });
  const double client_used = SelfCpuSeconds() - client_cpu;
  Report(shape, "ack+next", done.load(), seconds, ServerCpuSeconds(meter) - cpu,
         StoreCpuSeconds(shape) - store_cpu, requests.load(), client_used);
}

// CPU seconds the bare server has used, from its GET /cpu.
double BareCpuSeconds(ApiClient& api) {
  double seconds = 0;
  if (!absl::SimpleAtod(api.Get("/cpu").body, &seconds)) {
    absl::FPrintF(stderr, "the bare server did not tell its CPU time\n");
  }
  return seconds;
}

// The floor under every request: POSTs to a route that does not exist,
// which the server answers (404, a JSON error) without a store call. What
// one job per request cannot cost less than. `cpu_seconds`: how to ask the
// server for its CPU time.
void HttpFloor(const Shape& shape, int port, int requests,
               const std::function<double(ApiClient&)>& cpu_seconds) {
  ApiClient meter(port);
  const double cpu = cpu_seconds(meter);
  const std::string body = Json{{"payload", "0123456789"}}.dump();
  const double seconds = Parallel(shape.clients, [&](int c) {
    bench::LeanClient api(port);
    std::string reply;
    for (int i = c; i < requests; i += shape.clients) {
      api.Post("/v1/no-such-route", body, &reply);
    }
  });
  Report(shape, "no-op request", requests, seconds, cpu_seconds(meter) - cpu, 0,
         requests);
}

// The same against a server that only reads requests and writes a reply
// (bare_reply_server.h): the floor of any HTTP server on TCP loopback.
void BareFloor(const bench::BareReplyServer& bare, int requests) {
  for (const int clients : {1, 16}) {
    HttpFloor(Shape{"none", "bare tcp server", clients, 1, 0}, bare.port(),
              requests, BareCpuSeconds);
  }
}

void HttpRun(const Shape& shape, const std::string& url, int jobs,
             const std::vector<std::string>& server_args) {
  auto server = testing::ServeProcess::Start(url, server_args);
  if (!server.ok()) {
    absl::FPrintF(stderr, "cannot start the server: %s\n",
                  server.status().ToString());
    return;
  }
  const std::string topic = absl::StrCat("bench", shape.clients);
  HttpAdd(shape, (*server)->port(), topic, jobs);
  HttpReserveAck(shape, (*server)->port(), topic);
  if (shape.batch == 1) {
    HttpAdd(shape, (*server)->port(), topic, jobs);
    HttpAckWithNext(shape, (*server)->port(), topic);
    HttpFloor(shape, (*server)->port(), jobs, ServerCpuSeconds);
  }
  (*server)->Stop();
}

void LibraryRun(const Shape& shape, const std::string& url, int jobs) {
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenBackend(url);
  if (!backend.ok()) return;
  auto scheduler = Scheduler::Create(*std::move(backend));
  if (!scheduler.ok()) return;
  Scheduler& s = **scheduler;
  const std::string topic = absl::StrCat("lib", shape.clients);
  const std::vector<std::string> payloads = Payloads(shape.batch);
  const int calls = jobs / shape.batch;
  double cpu = SelfCpuSeconds();
  double store_cpu = StoreCpuSeconds(shape);
  double seconds = Parallel(shape.clients, [&](int c) {
    for (int i = c; i < calls; i += shape.clients) {
      if (shape.batch == 1) {
        s.Enqueue(topic, payloads[0]).IgnoreError();
      } else {
        s.EnqueueBatch(topic, payloads).IgnoreError();
      }
    }
  });
  Report(shape, "add", calls * shape.batch, seconds, SelfCpuSeconds() - cpu,
         StoreCpuSeconds(shape) - store_cpu, calls);
  std::atomic<int> done{0}, requests{0};
  cpu = SelfCpuSeconds();
  store_cpu = StoreCpuSeconds(shape);
  seconds = Parallel(shape.clients, [&](int) {
    for (;;) {
      absl::StatusOr<std::vector<Lease>> leases =
          s.ReserveBatch(topic, shape.batch);
      ++requests;
      if (!leases.ok() || leases->empty()) return;
      // As the server does: one ack call for the batch.
      if (shape.batch == 1) {
        s.Ack((*leases)[0]).IgnoreError();
      } else {
        s.AckBatch(*leases).IgnoreError();
      }
      ++requests;
      done += static_cast<int>(leases->size());
    }
  });
  Report(shape, "reserve+ack", done.load(), seconds, SelfCpuSeconds() - cpu,
         StoreCpuSeconds(shape) - store_cpu, requests.load());
}

int Main(int argc, char** argv) {
  // The library side runs under the policy the server runs under.
  SetRuntimePolicy();
  // First: it forks, and this process has no threads yet.
  absl::StatusOr<bench::BareReplyServer> bare = bench::BareReplyServer::Fork();
  if (!bare.ok()) {
    absl::FPrintF(stderr, "cannot start the bare server: %s\n",
                  bare.status().ToString());
    return 1;
  }
  int jobs = 20000;
  std::vector<int> batches = {1, 100};
  std::vector<std::string> stores = {"sqlite", "redis"};
  std::vector<int> client_counts = {1, 16};
  std::vector<std::string> server_args;  // more of `delayq serve`'s flags
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--jobs") absl::SimpleAtoi(argv[i + 1], &jobs);
    if (flag == "--store") stores = {argv[i + 1]};
    int clients = 0;
    if (flag == "--clients" && absl::SimpleAtoi(argv[i + 1], &clients) &&
        clients >= 1) {
      client_counts = {clients};
    }
    if (flag == "--server-arg") server_args.push_back(argv[i + 1]);
    int batch = 0;
    if (flag == "--batch" && absl::SimpleAtoi(argv[i + 1], &batch) &&
        batch >= 1) {
      batches = {batch};
    }
  }
  auto redis = testing::RedisServer::Start();
  if (!redis.ok()) {
    absl::FPrintF(stderr, "cannot start redis-server: %s\n",
                  redis.status().ToString());
    return 1;
  }
  if (std::find(batches.begin(), batches.end(), 1) != batches.end()) {
    BareFloor(*bare, jobs);
  }
  int run = 0;
  for (const int batch : batches) {
    for (const int clients : client_counts) {
      for (const bool http : {true, false}) {
        for (const std::string& store : stores) {
          const std::string url =
              store == "sqlite"
                  ? "sqlite:" +
                        testing::FreshDbPath(absl::StrCat("serve-bench", run))
                  : absl::StrCat("redis://127.0.0.1:", (*redis)->port(),
                                 "?namespace=serve-bench-", run);
          ++run;
          const Shape shape{store, http ? "http" : "library", clients, batch,
                            store == "sqlite" ? 0 : (*redis)->port()};
          if (http) {
            HttpRun(shape, url, jobs, server_args);
          } else {
            LibraryRun(shape, url, jobs);
          }
        }
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace delayq

int main(int argc, char** argv) { return delayq::Main(argc, argv); }
