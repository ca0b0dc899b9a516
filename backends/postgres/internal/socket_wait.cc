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

PGconn* ConnectBefore(
    const std::vector<std::pair<std::string, std::string>>& params,
    Deadline deadline, bool* timed_out) {
  *timed_out = false;
  std::vector<const char*> keys, values;
  for (const auto& [key, value] : params) {
    keys.push_back(key.c_str());
    values.push_back(value.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* conn = PQconnectStartParams(keys.data(), values.data(),
                                      /*expand_dbname=*/0);
  if (conn == nullptr || PQstatus(conn) == CONNECTION_BAD) return conn;
  // libpq's first step is to wait until the socket can be written.
  PostgresPollingStatusType step = PGRES_POLLING_WRITING;
  while (step != PGRES_POLLING_OK && step != PGRES_POLLING_FAILED) {
    // The socket changes when libpq moves on to the next host or address.
    const short events = step == PGRES_POLLING_WRITING ? POLLOUT : POLLIN;
    if (!WaitForSocket(PQsocket(conn), events, deadline)) {
      *timed_out = true;
      return conn;
    }
    step = PQconnectPoll(conn);
  }
  return conn;
}

}  // namespace postgres_internal
}  // namespace delayq
