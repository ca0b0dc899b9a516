// Copyright delayq authors.

#include "backends/redis/internal/push_io.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "backends/redis/internal/connection.h"

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

absl::Status PushIo::Await(int fd, short events, Clock::time_point deadline,
                           absl::string_view what) {
  for (;;) {
    int timeout_ms = -1;
    if (deadline != Clock::time_point::max()) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        return absl::DeadlineExceededError(absl::StrCat(
            "redis ", endpoint_, ": ", what, ": no answer within the timeout"));
      }
      timeout_ms = static_cast<int>(
          std::min<int64_t>(left.count(), std::numeric_limits<int>::max()));
    }
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {fd, events, 0}};
    const int n = poll(fds, fd >= 0 ? 2 : 1, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(
          absl::StrCat("redis ", endpoint_, ": poll: ", strerror(errno)));
    }
    if (fds[0].revents != 0)
      return absl::CancelledError("redis: " + what_closes_);
    if (n > 0) return absl::OkStatus();
  }
}

absl::Status PushIo::Send(redisContext* c, const std::string& request,
                          Clock::time_point deadline) {
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n =
        send(c->fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (absl::Status s = Await(c->fd, POLLOUT, deadline, "write"); !s.ok()) {
        return s;
      }
    } else if (n < 0 && errno != EINTR) {
      return absl::UnavailableError(
          absl::StrCat("redis ", endpoint_, ": write: ", strerror(errno)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Reply> PushIo::Next(redisContext* c,
                                   Clock::time_point deadline) {
  for (;;) {
    void* r = nullptr;
    if (redisGetReplyFromReader(c, &r) != REDIS_OK) {
      return ContextStatus(c, endpoint_, "read");
    }
    if (r != nullptr) return Reply(static_cast<redisReply*>(r));
    if (absl::Status s = Await(c->fd, POLLIN, deadline, "read"); !s.ok()) {
      return s;
    }
    if (redisBufferRead(c) != REDIS_OK) {
      return ContextStatus(c, endpoint_, "read");
    }
  }
}

bool PushIo::Sleep(Clock::duration d) {
  return Await(-1, 0, Clock::now() + d, "backoff").code() !=
         absl::StatusCode::kCancelled;
}

}  // namespace redis_internal
}  // namespace delayq
