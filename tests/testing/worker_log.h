// Copyright delayq authors.
//
// WorkerLog — what a worker's store-level commands (work, churn) reported,
// read back from its lines: jobs added, leases taken, acks tried and done.

#ifndef DELAYQ_TESTS_TESTING_WORKER_LOG_H_
#define DELAYQ_TESTS_TESTING_WORKER_LOG_H_

#include <cstdint>
#include <string>
#include <vector>

namespace delayq {
namespace testing {

struct WorkerLog {
  struct Reservation {
    std::string id;
    uint64_t token;
    int64_t now_us;
    int64_t deadline_us;
  };
  struct AckRecord {
    std::string id;
    uint64_t token;
    int code;  // absl::StatusCode; 0 is OK
  };
  std::vector<std::string> produced;  // "P": Add() returned OK
  std::vector<Reservation> reserved;  // "R": Reserve() leased it
  std::vector<AckRecord> acked;       // "A": Ack() returned
  std::vector<std::string> acking;    // "I": Ack() was about to be called
};

// AddToWorkerLog()
//
// Appends the records among `lines` to `log`; other lines are skipped.
void AddToWorkerLog(const std::vector<std::string>& lines, WorkerLog* log);

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_WORKER_LOG_H_
