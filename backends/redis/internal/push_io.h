// Copyright delayq authors.
//
// PushIo — waiting on a connection that the server pushes messages to (a
// subscription), from a thread of its own that must stop at once when its
// owner goes. Private to the Redis backend.
//
// Every wait polls the connection's socket and a wake eventfd together;
// once the eventfd is written (Wake()), every wait returns Cancelled. The
// news subscription and the sentinels' switch notices use it.

#ifndef DELAYQ_BACKENDS_REDIS_INTERNAL_PUSH_IO_H_
#define DELAYQ_BACKENDS_REDIS_INTERNAL_PUSH_IO_H_

#include <hiredis/hiredis.h>

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/redis/internal/shared_connection.h"

namespace delayq {
namespace redis_internal {

// A new non-blocking close-on-exec eventfd for PushIo, or the error.
absl::StatusOr<int> NewWakeFd();

// Writes the eventfd: every wait on it returns Cancelled from now on.
void Wake(int wake_fd);

class PushIo {
 public:
  using Clock = std::chrono::steady_clock;

  // `endpoint` names the server in messages; `closes` is what the Cancelled
  // status says ("news subscription closed").
  PushIo(int wake_fd, std::string endpoint, std::string closes)
      : wake_fd_(wake_fd),
        endpoint_(std::move(endpoint)),
        what_closes_(std::move(closes)) {}

  // Waits until `fd` has `events` or the deadline passes (no deadline:
  // Clock::time_point::max()); `fd` < 0 waits for the deadline only.
  absl::Status Await(int fd, short events, Clock::time_point deadline,
                     absl::string_view what);

  // Writes all of `request` by `deadline`.
  absl::Status Send(redisContext* c, const std::string& request,
                    Clock::time_point deadline);

  // The next reply or pushed message, waiting for bytes until `deadline`.
  absl::StatusOr<Reply> Next(redisContext* c, Clock::time_point deadline);

  // Waits `d`; false when woken (the owner is closing).
  bool Sleep(Clock::duration d);

  const std::string& endpoint() const { return endpoint_; }

 private:
  const int wake_fd_;
  const std::string endpoint_;
  const std::string what_closes_;
};

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_INTERNAL_PUSH_IO_H_
