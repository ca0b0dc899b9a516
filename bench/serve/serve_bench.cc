// Copyright delayq authors.
//
// `delayq serve` over loopback beside the library it wraps: add, and
// reserve + ack, jobs/s with 1 and 16 keep-alive clients, on SQLite and
// Redis, and the server's CPU per request (from /proc/PID/stat) beside the
// library's CPU per call (getrusage). The server runs in a process of its
// own, as deployed; the library figures are one process.
//
//   bazel run -c opt //bench:serve_bench -- [--jobs N]
//
// One JSON object per line.

#include <sys/resource.h>
#include <unistd.h>

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
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "delayq/delayq.h"
#include "tests/serve/serve_process.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

using testing::ApiClient;
using testing::Json;

// CPU seconds (user + system) a process has used, from /proc/PID/stat.
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  // Fields after the command name, which is in parentheses.
  std::vector<std::string> f =
      absl::StrSplit(stat.substr(stat.rfind(')') + 2), ' ');
  double utime = 0, stime = 0;
  if (f.size() < 13 || !absl::SimpleAtod(f[11], &utime) ||
      !absl::SimpleAtod(f[12], &stime)) {
    return 0;
  }
  return (utime + stime) / sysconf(_SC_CLK_TCK);
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

void Report(const std::string& store, const std::string& via,
            const std::string& op, int clients, int jobs, double seconds,
            double cpu_seconds, int requests) {
  absl::PrintF(
      "{\"bench\":\"serve\",\"store\":\"%s\",\"via\":\"%s\",\"op\":\"%s\","
      "\"clients\":%d,\"jobs\":%d,\"jobs_per_s\":%.0f,\"cpu_us_per_job\":%.1f,"
      "\"cpu_us_per_request\":%.1f}\n",
      store, via, op, clients, jobs, jobs / seconds, cpu_seconds * 1e6 / jobs,
      cpu_seconds * 1e6 / std::max(requests, 1));
  std::fflush(stdout);
}

void HttpRun(const std::string& store, const std::string& url, int clients,
             int jobs) {
  auto server = testing::ServeProcess::Start(url);
  if (!server.ok()) {
    absl::FPrintF(stderr, "cannot start the server: %s\n",
                  server.status().ToString());
    return;
  }
  const int port = (*server)->port();
  const pid_t pid = (*server)->pid();
  const std::string topic = absl::StrCat("bench", clients);

  double cpu = ProcessCpuSeconds(pid);
  double seconds = Parallel(clients, [&](int c) {
    ApiClient api(port);
    for (int i = c; i < jobs; i += clients) {
      api.Post("/v1/topics/" + topic + "/jobs", {{"payload", "0123456789"}});
    }
  });
  Report(store, "http", "add", clients, jobs, seconds,
         ProcessCpuSeconds(pid) - cpu, jobs);

  std::atomic<int> done{0}, requests{0};
  cpu = ProcessCpuSeconds(pid);
  seconds = Parallel(clients, [&](int) {
    ApiClient api(port);
    for (;;) {
      testing::HttpReply r =
          api.Post("/v1/topics/" + topic + "/reserve", Json::object());
      ++requests;
      if (r.status != 200 || r.json["leases"].empty()) return;
      const Json& lease = r.json["leases"][0];
      api.Post("/v1/jobs/" + lease["job"]["id"].get<std::string>() + "/ack",
               {{"token", lease["token"]}});
      ++requests;
      ++done;
    }
  });
  Report(store, "http", "reserve+ack", clients, done.load(), seconds,
         ProcessCpuSeconds(pid) - cpu, requests.load());
  (*server)->Stop();
}

void LibraryRun(const std::string& store, const std::string& url, int clients,
                int jobs) {
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenBackend(url);
  if (!backend.ok()) return;
  auto scheduler = Scheduler::Create(*std::move(backend));
  if (!scheduler.ok()) return;
  Scheduler& s = **scheduler;
  const std::string topic = absl::StrCat("lib", clients);
  double cpu = SelfCpuSeconds();
  double seconds = Parallel(clients, [&](int c) {
    for (int i = c; i < jobs; i += clients) {
      s.Enqueue(topic, "0123456789").IgnoreError();
    }
  });
  Report(store, "library", "add", clients, jobs, seconds,
         SelfCpuSeconds() - cpu, jobs);
  std::atomic<int> done{0}, calls{0};
  cpu = SelfCpuSeconds();
  seconds = Parallel(clients, [&](int) {
    for (;;) {
      absl::StatusOr<std::optional<Lease>> lease = s.Reserve(topic);
      ++calls;
      if (!lease.ok() || !lease->has_value()) return;
      s.Ack(**lease).IgnoreError();
      ++calls;
      ++done;
    }
  });
  Report(store, "library", "reserve+ack", clients, done.load(), seconds,
         SelfCpuSeconds() - cpu, calls.load());
}

int Main(int argc, char** argv) {
  int jobs = 5000;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--jobs") absl::SimpleAtoi(argv[i + 1], &jobs);
  }
  auto redis = testing::RedisServer::Start();
  if (!redis.ok()) {
    absl::FPrintF(stderr, "cannot start redis-server: %s\n",
                  redis.status().ToString());
    return 1;
  }
  int run = 0;
  for (const int clients : {1, 16}) {
    for (const bool http : {true, false}) {
      const std::string sqlite =
          "sqlite:" + testing::FreshDbPath(absl::StrCat("serve-bench", run));
      const std::string redis_url =
          absl::StrCat("redis://127.0.0.1:", (*redis)->port(),
                       "?namespace=serve-bench-", run++);
      if (http) {
        HttpRun("sqlite", sqlite, clients, jobs);
        HttpRun("redis", redis_url, clients, jobs);
      } else {
        LibraryRun("sqlite", sqlite, clients, jobs);
        LibraryRun("redis", redis_url, clients, jobs);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace delayq

int main(int argc, char** argv) { return delayq::Main(argc, argv); }
