// Copyright delayq authors.

#include "tests/testing/loopback_port.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace testing {

absl::StatusOr<int> BindLoopback(int fd) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot bind a loopback socket: ", std::strerror(errno)));
  }
  return ntohs(addr.sin_port);
}

}  // namespace testing
}  // namespace delayq
