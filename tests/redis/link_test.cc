// Copyright delayq authors.
//
// The store's connection to a server (backends/redis/client/link.h) against
// a server that misbehaves: the test's own end of a Unix socket.

#include "backends/redis/client/link.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace redis_internal {
namespace {

using ::delayq::testing::StatusIs;

// A reply's deadline holds while its bytes keep coming. A server that
// sends a reply without end, without pause (a bulk string announcing 2 GB,
// say), would otherwise keep the call reading, and keeping, all it sends:
// the deadline was looked at only when the socket ran dry. Shown without
// timing: with the deadline passed and 100 KB of such a reply waiting in
// the socket, the call ends at once and leaves them unread.
TEST(LinkTest, APassedDeadlineEndsAReplyWhoseBytesKeepComing) {
  // A socket's path must be short: a folder of its own under /tmp.
  char folder[] = "/tmp/dq-link-XXXXXX";
  ASSERT_NE(mkdtemp(folder), nullptr);
  const std::string path = std::string(folder) + "/s";
  const int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(
      bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
      0);
  ASSERT_EQ(listen(listener, 1), 0);

  LinkTarget target;
  target.unix_socket = path;
  target.endpoint = "flood";
  absl::StatusOr<std::unique_ptr<Link>> link =
      Link::Dial(target, absl::Seconds(5), /*tls=*/nullptr);
  ASSERT_TRUE(link.ok()) << link.status();
  const int server = accept(listener, nullptr, nullptr);
  ASSERT_GE(server, 0);
  const std::string bytes = "$2000000000\r\n" + std::string(100 * 1024, 'x');
  ASSERT_EQ(send(server, bytes.data(), bytes.size(), MSG_DONTWAIT),
            static_cast<ssize_t>(bytes.size()));

  absl::StatusOr<Reply> reply =
      (*link)->Next(Clock::now() - std::chrono::milliseconds(1));
  EXPECT_THAT(reply.status(), StatusIs(absl::StatusCode::kDeadlineExceeded));
  char byte;
  EXPECT_EQ(recv((*link)->fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT), 1)
      << "the call read the reply's bytes past its deadline";

  close(server);
  close(listener);
  unlink(path.c_str());
  rmdir(folder);
}

}  // namespace
}  // namespace redis_internal
}  // namespace delayq
