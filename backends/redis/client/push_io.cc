// Copyright delayq authors.

#include "backends/redis/client/push_io.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/redis/client/connection.h"

namespace delayq {
namespace redis_internal {

absl::StatusOr<int> NewWakeFd() {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("redis: eventfd: ", strerror(errno)));
  }
  return fd;
}

void Wake(int wake_fd) {
  const uint64_t one = 1;
  ssize_t n;
  do {
    n = write(wake_fd, &one, sizeof(one));
  } while (n < 0 && errno == EINTR);
}

absl::Status PushIo::Closing(absl::Status status) const {
  if (absl::IsCancelled(status)) {
    return absl::CancelledError("redis: " + what_closes_);
  }
  return status;
}

absl::Status PushIo::Send(Link& link, const std::string& request,
                          Clock::time_point deadline) {
  return Closing(link.Write(request, deadline, wake_fd_));
}

absl::StatusOr<Reply> PushIo::Next(Link& link, Clock::time_point deadline) {
  absl::StatusOr<Reply> reply = link.Next(deadline, wake_fd_);
  if (!reply.ok()) return Closing(reply.status());
  return reply;
}

absl::StatusOr<std::vector<Reply>> PushIo::Exchange(
    Link& link, const std::vector<Command>& commands,
    Clock::time_point deadline) {
  absl::StatusOr<std::vector<Reply>> replies =
      redis_internal::Exchange(link, commands, deadline, wake_fd_);
  if (!replies.ok()) return Closing(replies.status());
  return replies;
}

absl::StatusOr<std::unique_ptr<Link>> PushIo::Dial(const Target& target,
                                                   const PoolOptions& options) {
  absl::StatusOr<std::unique_ptr<Link>> link =
      redis_internal::Dial(target, options, wake_fd_);
  if (!link.ok()) return Closing(link.status());
  return link;
}

bool PushIo::Sleep(Clock::duration d) {
  return Await(-1, 0, Clock::now() + d, wake_fd_, endpoint_, "backoff")
             .code() != absl::StatusCode::kCancelled;
}

}  // namespace redis_internal
}  // namespace delayq
