// Copyright delayq authors.
//
// PushIo — waiting on a connection that the server pushes messages to (a
// subscription), from a thread of its own that must stop at once when its
// owner goes. Private to the Redis backend.
//
// Every wait polls the connection's socket and a wake eventfd together;
// once the eventfd is written (Wake()), every wait returns Cancelled. The
// news subscription and the sentinels' switch notices use it.

#ifndef DELAYQ_BACKENDS_REDIS_CLIENT_PUSH_IO_H_
#define DELAYQ_BACKENDS_REDIS_CLIENT_PUSH_IO_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/redis/client/connection.h"
#include "backends/redis/client/link.h"

namespace delayq {
namespace redis_internal {

// A new non-blocking close-on-exec eventfd for PushIo, or the error.
absl::StatusOr<int> NewWakeFd();

// Writes the eventfd: every wait on it returns Cancelled from now on.
void Wake(int wake_fd);

class PushIo {
 public:
  // `endpoint` names the server in messages; `closes` is what the Cancelled
  // status says ("news subscription closed").
  PushIo(int wake_fd, std::string endpoint, std::string closes)
      : wake_fd_(wake_fd),
        endpoint_(std::move(endpoint)),
        what_closes_(std::move(closes)) {}

  // Writes all of `request` by `deadline`.
  absl::Status Send(Link& link, const std::string& request,
                    Clock::time_point deadline);

  // The next reply or pushed message, waiting for bytes until `deadline`.
  absl::StatusOr<Reply> Next(Link& link, Clock::time_point deadline);

  // Writes `commands` and reads one reply to each by `deadline`.
  absl::StatusOr<std::vector<Reply>> Exchange(
      Link& link, const std::vector<Command>& commands,
      Clock::time_point deadline);

  // A new connection to `target` (see Dial() in connection.h).
  absl::StatusOr<std::unique_ptr<Link>> Dial(const Target& target,
                                             const PoolOptions& options);

  // Waits `d`; false when woken (the owner is closing).
  bool Sleep(Clock::duration d);

  const std::string& endpoint() const { return endpoint_; }

 private:
  const int wake_fd_;
  // `status` with Cancelled worded as what closes.
  absl::Status Closing(absl::Status status) const;

  const std::string endpoint_;
  const std::string what_closes_;
};

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_CLIENT_PUSH_IO_H_
