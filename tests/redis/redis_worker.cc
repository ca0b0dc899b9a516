// Copyright delayq authors.
//
// A worker process for the multi-process test: reserves and acknowledges
// jobs of the given topics from several threads until none is left, then
// writes the id of every job it acknowledged, one per line.
//
//   redis_worker PORT NAMESPACE TOPIC[,TOPIC...] THREADS OUT_FILE
//
// Exit status: 0 when every call succeeded, 2 on any error.

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "backends/redis/internal/backend_impl.h"

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s PORT NAMESPACE TOPICS THREADS OUT_FILE\n",
            argv[0]);
    return 2;
  }
  delayq::RedisOptions options;
  int threads = 0;
  if (!absl::SimpleAtoi(argv[1], &options.port) ||
      !absl::SimpleAtoi(argv[4], &threads)) {
    fprintf(stderr, "bad number\n");
    return 2;
  }
  options.ns = argv[2];
  const std::vector<std::string> topics = absl::StrSplit(argv[3], ',');
  auto backend = delayq::RedisBackend::Open(options);
  if (!backend.ok()) {
    fprintf(stderr, "open: %s\n", backend.status().ToString().c_str());
    return 2;
  }

  std::mutex mu;
  std::vector<std::string> acked;
  std::atomic<bool> failed{false};
  auto work = [&](int t) {
    // Odd threads reserve in batches and acknowledge in one pipeline.
    const int batch = t % 2 == 1 ? 5 : 1;
    int empty_rounds = 0;
    std::vector<std::string> mine;
    while (empty_rounds < 3 && !failed.load()) {
      bool got_any = false;
      for (const std::string& topic : topics) {
        auto leases = (*backend)->Reserve(topic, batch, absl::Now());
        if (!leases.ok()) {
          fprintf(stderr, "reserve: %s\n", leases.status().ToString().c_str());
          failed = true;
          return;
        }
        if (leases->empty()) continue;
        got_any = true;
        auto acks = (*backend)->AckBatch(*leases, absl::Now());
        if (!acks.ok()) {
          fprintf(stderr, "ack: %s\n", acks.status().ToString().c_str());
          failed = true;
          return;
        }
        for (size_t i = 0; i < leases->size(); ++i) {
          if (!(*acks)[i].ok()) {
            fprintf(stderr, "ack %s: %s\n", (*leases)[i].job.id.c_str(),
                    (*acks)[i].ToString().c_str());
            failed = true;
          }
          mine.push_back((*leases)[i].job.id);
        }
      }
      empty_rounds = got_any ? 0 : empty_rounds + 1;
    }
    std::lock_guard<std::mutex> lock(mu);
    acked.insert(acked.end(), mine.begin(), mine.end());
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (std::thread& t : pool) t.join();

  std::ofstream out(argv[5]);
  for (const std::string& id : acked) out << id << "\n";
  out.close();
  return failed.load() || !out ? 2 : 0;
}
