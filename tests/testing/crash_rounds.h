// Copyright delayq authors.
//
// RunCrashRounds() — the crash test every shared store runs: a worker
// process enqueues, reserves and acks on the store ("churn", see
// worker_main.cc) and is killed with SIGKILL at a random moment, again and
// again. After each kill every job whose Add() returned OK is still there
// unless its Ack() returned OK, and no acknowledged job is back. At the end
// the jobs the dead processes held come back once their ttr has passed,
// and not before, and every job is done exactly once.

#ifndef DELAYQ_TESTS_TESTING_CRASH_ROUNDS_H_
#define DELAYQ_TESTS_TESTING_CRASH_ROUNDS_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "delayq/backend.h"

namespace delayq {
namespace testing {

struct CrashRounds {
  // The store, as the worker opens it.
  std::string url;
  // Opens the store in this process; nullptr (having failed the test) when
  // it cannot.
  std::function<std::unique_ptr<Backend>()> open;
  int rounds = 20;
  // Each kill comes at a random moment within this long of the worker's
  // first report.
  absl::Duration kill_within = absl::Milliseconds(60);
  // Checked after each kill before the store is opened, e.g. the file's
  // integrity; what is wrong, or "" when nothing is.
  std::function<std::string()> check_after_kill = [] { return ""; };
};

// Runs the rounds and checks as above, with gtest assertions.
void RunCrashRounds(const CrashRounds& test);

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_CRASH_ROUNDS_H_
