// Copyright delayq authors.

#include "backends/postgres/internal/socket_wait.h"

#include <errno.h>
#include <poll.h>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace delayq {
namespace postgres_internal {

Deadline DeadlineAfter(absl::Duration wait) {
  return std::chrono::steady_clock::now() + absl::ToChronoMicroseconds(wait);
}

bool WaitForSocket(int fd, short events, Deadline deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p = {fd, events, 0};
    const int64_t ms =
        std::min<int64_t>(left.count(), std::numeric_limits<int>::max());
    const int n = poll(&p, 1, static_cast<int>(ms));
    if (n > 0 || (n < 0 && errno != EINTR)) return true;
  }
}

}  // namespace postgres_internal
}  // namespace delayq
