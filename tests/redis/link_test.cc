// Copyright delayq authors.
//
// The store's connections to a server (backends/redis/client/link.h, and
// the pool's in connection.h) against a server that misbehaves: the
// test's own end of a Unix socket.

#include "backends/redis/client/link.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "backends/redis/client/connection.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace redis_internal {
namespace {

using ::delayq::testing::StatusIs;

// The test's end of a Unix socket.
class FakeServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A socket's path must be short: a folder of its own under /tmp.
    ASSERT_NE(mkdtemp(folder_), nullptr);
    path_ = std::string(folder_) + "/s";
    listener_ = socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(listener_, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path_.c_str(), path_.size() + 1);
    ASSERT_EQ(
        bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
        0);
    ASSERT_EQ(listen(listener_, 1), 0);
  }

  void TearDown() override {
    if (server_ >= 0) close(server_);
    if (listener_ >= 0) close(listener_);
    unlink(path_.c_str());
    rmdir(folder_);
  }

  // The server's bytes, all at once.
  void ServerSends(const std::string& bytes) {
    ASSERT_EQ(send(server_, bytes.data(), bytes.size(), MSG_DONTWAIT),
              static_cast<ssize_t>(bytes.size()));
  }

  static Clock::time_point InASecond() {
    return Clock::now() + std::chrono::seconds(1);
  }

  char folder_[20] = "/tmp/dq-link-XXXXXX";
  std::string path_;
  int listener_ = -1;
  int server_ = -1;  // the accepted connection
};

// And the store's Link connected to it.
class LinkTest : public FakeServerTest {
 protected:
  void SetUp() override {
    FakeServerTest::SetUp();
    LinkTarget target;
    target.unix_socket = path_;
    target.endpoint = "fake";
    absl::StatusOr<std::unique_ptr<Link>> link =
        Link::Dial(target, absl::Seconds(5), /*tls=*/nullptr);
    ASSERT_TRUE(link.ok()) << link.status();
    link_ = *std::move(link);
    server_ = accept(listener_, nullptr, nullptr);
    ASSERT_GE(server_, 0);
  }

  std::unique_ptr<Link> link_;
};

// A reply's deadline holds while its bytes keep coming. A server that
// sends a reply without end, without pause (a bulk string announcing 2 GB,
// say), would otherwise keep the call reading, and keeping, all it sends:
// the deadline was looked at only when the socket ran dry. Shown without
// timing: with the deadline passed and 100 KB of such a reply waiting in
// the socket, the call ends at once and leaves them unread.
TEST_F(LinkTest, APassedDeadlineEndsAReplyWhoseBytesKeepComing) {
  ServerSends("$2000000000\r\n" + std::string(100 * 1024, 'x'));

  absl::StatusOr<Reply> reply =
      link_->Next(Clock::now() - std::chrono::milliseconds(1));
  EXPECT_THAT(reply.status(), StatusIs(absl::StatusCode::kDeadlineExceeded));
  char byte;
  EXPECT_EQ(recv(link_->fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT), 1)
      << "the call read the reply's bytes past its deadline";
}

// A reply nobody asked for that came with one that was asked for (two
// answers to a PING) is already off the socket, in the parser's buffer,
// when the connection goes idle. Taken for the next call's reply, it would
// put every later reply one call out of step.
TEST_F(LinkTest, AnIdleConnectionHoldingAReplyNobodyAskedForIsRefused) {
  ServerSends("+PONG\r\n+EXTRA\r\n");
  absl::StatusOr<Reply> reply = link_->Next(InASecond());
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(std::string((*reply)->str, (*reply)->len), "PONG");
  char byte;
  ASSERT_EQ(recv(link_->fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT), -1)
      << "the extra reply is still in the socket, not in the buffer";

  EXPECT_THAT(link_->CheckIdle(), StatusIs(absl::StatusCode::kInternal));
}

TEST_F(LinkTest, AnIdleConnectionThatReceivedOnlyItsRepliesIsUsable) {
  ServerSends("+PONG\r\n");
  absl::StatusOr<Reply> reply = link_->Next(InASecond());
  ASSERT_TRUE(reply.ok()) << reply.status();

  EXPECT_TRUE(link_->CheckIdle().ok());
}

// Part of a reply nobody asked for counts too.
TEST_F(LinkTest, AnIdleConnectionHoldingPartOfAReplyIsRefused) {
  ServerSends("+PONG\r\n+EXT");
  absl::StatusOr<Reply> reply = link_->Next(InASecond());
  ASSERT_TRUE(reply.ok()) << reply.status();

  EXPECT_THAT(link_->CheckIdle(), StatusIs(absl::StatusCode::kInternal));
}

// A server that answers its greeting (PING) twice: the pool's new
// connection is refused, where its first call would have taken the second
// answer for its own reply, and every later call the one before.
TEST_F(FakeServerTest, AConnectionWhoseGreetingGotAnExtraReplyIsRefused) {
  std::thread server([this] {
    server_ = accept(listener_, nullptr, nullptr);
    if (server_ < 0) return;
    char request[256];
    if (recv(server_, request, sizeof(request), 0) <= 0) return;
    const std::string answers = "+PONG\r\n+EXTRA\r\n";
    send(server_, answers.data(), answers.size(), 0);
  });
  PoolOptions options;
  options.unix_socket = path_;
  options.connect_timeout = absl::Seconds(5);
  options.command_timeout = absl::Seconds(5);
  options.size = 1;
  ConnectionPool pool(options);

  absl::StatusOr<std::vector<Reply>> replies = pool.Pipeline({{"PING"}});
  server.join();

  EXPECT_THAT(replies.status(), StatusIs(absl::StatusCode::kInternal,
                                         ::testing::HasSubstr("no call")));
}

}  // namespace
}  // namespace redis_internal
}  // namespace delayq
