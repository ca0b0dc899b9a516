// Copyright delayq authors.
//
// How tests/testing/worker reports: one line per event on stdout, each with a
// single write(2). Lines are short (below PIPE_BUF), so lines of concurrent
// threads never interleave, and nothing waits in a buffer: a line the worker
// wrote is readable even after the worker is killed the next instant.

#ifndef DELAYQ_TESTS_TESTING_WORKER_OUTPUT_H_
#define DELAYQ_TESTS_TESTING_WORKER_OUTPUT_H_

#include <string>

#include "absl/status/status.h"

namespace delayq {
namespace worker {

// Writes `line` and a newline.
void Say(const std::string& line);

// Says "error WHAT: STATUS" and ends the process with status 2.
[[noreturn]] void Die(const std::string& what, const absl::Status& status);

}  // namespace worker
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_WORKER_OUTPUT_H_
