// Copyright delayq authors.
//
// RunBatchRounds() — the test of a batch's completion that every shared
// store runs, with processes racing to finish it. Each round opens a batch
// of one job per worker process, and each worker reserves its job and acks
// it at the same instant as the others; in half the rounds another process
// closes the batch at that instant too, racing the last acks (in the others
// the batch was closed first). With `kill`, every process is killed with
// SIGKILL at a random moment around that instant, so the kills land before,
// inside and after the steps that count the last jobs and release the
// completion job.
//
// After each round, before anything else touches the store: the batch
// counts as done exactly the jobs that left the store, it is closed when
// its closer said so (and open when no close was sent), and the completion
// job waits unless the batch is complete, and is ready if it is. Then the
// test finishes what the processes left (their leases run out, the rest is
// acked, the batch closed): the completion job is then ready, exactly once,
// with every job counted done once.

#ifndef DELAYQ_TESTS_TESTING_BATCH_ROUNDS_H_
#define DELAYQ_TESTS_TESTING_BATCH_ROUNDS_H_

#include <functional>
#include <memory>
#include <string>

#include "delayq/backend.h"

namespace delayq {
namespace testing {

struct BatchRounds {
  // The store, as the worker processes open it.
  std::string url;
  // Opens the store in this process; nullptr (having failed the test) when
  // it cannot.
  std::function<std::unique_ptr<Backend>()> open;
  int rounds = 20;
  // Worker processes, each acking one job of the batch.
  int processes = 3;
  // Kill the processes at random moments around the acks.
  bool kill = false;
  // Checked after each round before the store is opened, e.g. the file's
  // integrity; what is wrong, or "" when nothing is.
  std::function<std::string()> check_after_round = [] { return ""; };
};

// Runs the rounds and checks as above, with gtest assertions.
void RunBatchRounds(const BatchRounds& test);

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_BATCH_ROUNDS_H_
