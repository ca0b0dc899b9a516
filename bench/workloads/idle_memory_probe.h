// Copyright delayq authors.
//
// idle_memory_probe.h — how much slower this process's memory is to touch
// after it has lain idle, on the host the workload runs on.
//
// Why: on some virtual machines the host takes back a guest's memory that
// has not been touched for a while, and touching it again faults to the
// host, tens of microseconds a page, for every page. A delivery after an
// idle second then runs on memory that is slow for its first milliseconds
// (the scheduler's, the store client's, the store server's), and the first
// jobs after a quiet spell are late for a reason that is not the queue's.
// The probe measures it beside the lateness it explains: it touches its own
// pages once warm, then again after it left them alone for `idle`.

#ifndef DELAYQ_BENCH_WORKLOADS_IDLE_MEMORY_PROBE_H_
#define DELAYQ_BENCH_WORKLOADS_IDLE_MEMORY_PROBE_H_

#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace delayq {
namespace bench {

class IdleMemoryProbe {
 public:
  // Pages the probe touches (16 MiB of 4 KiB pages).
  static constexpr int kPages = 4096;

  // Starts the probe on a thread of its own; it takes about `idle`.
  explicit IdleMemoryProbe(absl::Duration idle);
  // Stops a probe whose idle time is not up (a workload that failed does
  // not wait for it).
  ~IdleMemoryProbe();
  IdleMemoryProbe(const IdleMemoryProbe&) = delete;
  IdleMemoryProbe& operator=(const IdleMemoryProbe&) = delete;

  // Waits for the probe (its idle time first) and returns, as a JSON
  // object, the microseconds a page took to touch warm and after the idle
  // time, and that time:
  //   {"warm_us_per_page": 0.05, "after_idle_us_per_page": 21.3,
  //    "idle_ms": 1000}
  std::string Finish();

 private:
  const absl::Duration idle_;
  absl::Notification stop_;
  double warm_us_ = 0;
  double after_idle_us_ = 0;
  std::thread thread_;
};

}  // namespace bench
}  // namespace delayq

#endif  // DELAYQ_BENCH_WORKLOADS_IDLE_MEMORY_PROBE_H_
