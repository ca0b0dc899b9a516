// Copyright delayq authors.
//
// BindLoopback() — binds a socket to a port the kernel picks on 127.0.0.1,
// for tests and benchmarks that need a free port or a listener of their
// own.

#ifndef DELAYQ_TESTS_TESTING_LOOPBACK_PORT_H_
#define DELAYQ_TESTS_TESTING_LOOPBACK_PORT_H_

#include "absl/status/statusor.h"

namespace delayq {
namespace testing {

// Binds `fd` (an AF_INET stream socket) to 127.0.0.1 on a free port and
// returns the port. Leaves `fd` open either way.
absl::StatusOr<int> BindLoopback(int fd);

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_LOOPBACK_PORT_H_
