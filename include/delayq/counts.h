// Copyright delayq authors.
//
// counts.h — what a store counts as its jobs move, per topic and minute.
//
// Every store counts each transition in the same atomic step that makes it
// (the SQLite transaction, the Redis script), so the figures are the same
// whichever process reads them, and a process killed mid-call counts a
// transition exactly when it made it. A store keeps the minutes of a
// bounded window (CountsOptions::window, 24 hours unless told otherwise)
// and, per topic, totals since the topic was first counted, which only
// grow (the Prometheus counters are read from them).
//
//   absl::Time now = clock.Now();
//   auto minutes = backend->Counts(now - absl::Hours(1), now);
//   for (const delayq::TopicMinute& m : *minutes) {
//     printf("%s %s done %lld\n", m.topic.c_str(),
//            absl::FormatTime(m.minute).c_str(), m.counts.done);
//   }

#ifndef DELAYQ_COUNTS_H_
#define DELAYQ_COUNTS_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/time/time.h"

namespace delayq {

// The delivery lateness buckets: a delivery (a reservation) that came
// `reserved time - run_at` after its job was due falls in the first bucket
// whose bound it does not exceed, or in the last one, which has no bound.
inline constexpr int kLatenessBuckets = 6;
inline constexpr std::array<int64_t, kLatenessBuckets - 1>
    kLatenessBoundsMicros = {10'000, 100'000, 1'000'000, 10'000'000,
                             60'000'000};

// The bucket of a delivery `late_us` microseconds after its run_at (a
// negative lateness counts as none).
int LatenessBucket(int64_t late_us);

// JobCounts
//
// How many of each transition a topic had in some span of time.
struct JobCounts {
  int64_t enqueued = 0;  // jobs added (Add(), FireSchedule())
  int64_t done = 0;      // jobs acked
  int64_t failed = 0;    // attempts that ended in Fail()
  int64_t retried = 0;   // of those, the jobs that will run again
  int64_t expired = 0;   // leases whose deadline passed before an answer
  int64_t dead = 0;      // jobs that went dead (failed, expired or lapsed)
  int64_t lapsed = 0;    // jobs whose expire_at came before a reservation
  // Deliveries (reservations) by how late after their run_at they came.
  std::array<int64_t, kLatenessBuckets> lateness{};

  // Every reservation counted.
  int64_t delivered() const;
  bool empty() const;
  JobCounts& operator+=(const JobCounts& other);
  friend bool operator==(const JobCounts& a, const JobCounts& b);
  friend bool operator!=(const JobCounts& a, const JobCounts& b) {
    return !(a == b);
  }
};

// TopicMinute
//
// One topic's counts in the minute that starts at `minute`.
struct TopicMinute {
  std::string topic;
  absl::Time minute;
  JobCounts counts;
};

// TopicTotals
//
// One topic's counts since the store first counted it.
struct TopicTotals {
  std::string topic;
  JobCounts counts;
};

// CountsOptions
//
// What a store counts (see the stores' options and their URLs' `counts=`
// and `counts_window=`).
struct CountsOptions {
  // Off: the store counts nothing (Counts() and CountTotals() return
  // nothing new); what it counted before stays until its window passes.
  bool enabled = true;
  // How long a minute's counts are kept; whole minutes, at least one.
  absl::Duration window = absl::Hours(24);
};

// The start of the minute that holds `t`.
absl::Time MinuteOf(absl::Time t);

}  // namespace delayq

#endif  // DELAYQ_COUNTS_H_
