// Copyright delayq authors.
//
// socket_wait.h — waiting on a libpq connection's socket until a deadline:
// every wait of the store's own connections goes through here, so that a
// server that stops answering (frozen, or behind a network that drops
// packets without a word) ends the wait instead of hanging the call.
// libpq's blocking calls (PQexec*) wait without a limit. (Opening a
// connection blocks, bounded by libpq's connect_timeout: connect_plan.cc.)

#ifndef DELAYQ_BACKENDS_POSTGRES_INTERNAL_SOCKET_WAIT_H_
#define DELAYQ_BACKENDS_POSTGRES_INTERNAL_SOCKET_WAIT_H_

#include <chrono>

#include "absl/time/time.h"

namespace delayq {
namespace postgres_internal {

// A point on the monotonic clock: a wall clock set back must not stretch
// a wait.
using Deadline = std::chrono::steady_clock::time_point;
Deadline DeadlineAfter(absl::Duration wait);

// Waits until `fd` has one of poll()'s `events` (POLLIN, POLLOUT) or
// `deadline` passes; false when it passed. A socket that failed counts as
// ready: the libpq call that follows reports the error.
bool WaitForSocket(int fd, short events, Deadline deadline);

}  // namespace postgres_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_POSTGRES_INTERNAL_SOCKET_WAIT_H_
