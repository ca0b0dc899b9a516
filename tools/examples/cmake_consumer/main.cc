// Copyright delayq authors.
//
// Built against an installed delayq with find_package(delayq): a job
// delayed by 30 minutes on a SQLite file, run when a simulated clock gets
// there. Exits 0 only if the job ran, with its payload, at its time.

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "delayq/delayq.h"

int main() {
  const char* tmp = std::getenv("TMPDIR");
  const std::string url = std::string("sqlite:") + (tmp ? tmp : "/tmp") +
                          "/delayq-consumer-" + std::to_string(getpid()) +
                          ".db";
  auto backend = delayq::OpenBackend(url);
  if (!backend.ok()) {
    std::fprintf(stderr, "open %s: %s\n", url.c_str(),
                 backend.status().ToString().c_str());
    return 1;
  }
  const absl::Time start = absl::FromUnixSeconds(1'800'000'000);
  delayq::SimulatedClock clock(start);
  delayq::SchedulerOptions options;
  options.clock = &clock;
  auto scheduler = delayq::Scheduler::Create(*std::move(backend), options);
  if (!scheduler.ok()) return 1;
  delayq::JobOptions job;
  job.delay = absl::Minutes(30);
  if (!(*scheduler)->Enqueue("orders.expire", "order-42", job).ok()) return 1;

  clock.Advance(absl::Minutes(29));
  auto early = (*scheduler)->Reserve("orders.expire");
  if (!early.ok() || early->has_value()) return 1;  // not due yet
  clock.Advance(absl::Minutes(1));
  auto lease = (*scheduler)->Reserve("orders.expire");
  if (!lease.ok() || !lease->has_value()) return 1;
  const bool ran = (*lease)->job.payload == "order-42";
  if (!(*scheduler)->Ack(**lease).ok()) return 1;
  std::printf("%s after %s\n", ran ? "ran order-42" : "wrong payload",
              absl::FormatDuration(clock.Now() - start).c_str());
  std::remove(url.substr(7).c_str());
  return ran ? 0 : 1;
}
