// Copyright delayq authors.
//
// Replicated writes on a real primary and replica: with wait=N every call
// that changes the store is followed by WAIT in the same round trip, and a
// call that too few replicas confirmed says so (IsUnconfirmedWrite) while
// its change stands on the primary. Calls that only read never wait.

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "delayq/redis_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/eventually.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::Eventually;
using ::delayq::testing::RedisServer;
using ::delayq::testing::ReplicaCaughtUp;
using ::delayq::testing::StatusIs;
using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

NewJob Job(const std::string& id) {
  NewJob job;
  job.id = id;
  job.topic = "mail";
  job.run_at = kT0;
  return job;
}

// Every wait here is a second long: on a loaded machine (a sanitizer build,
// CI running tests side by side) a live replica once took more than 200 ms
// to confirm.
class WaitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(primary_, RedisServer::Start());
    ASSERT_OK_AND_ASSIGN(replica_,
                         RedisServer::Start({"--replicaof", "127.0.0.1",
                                             absl::StrCat(primary_->port())}));
    ASSERT_TRUE(Eventually(absl::Seconds(20), [&] {
      return ReplicaCaughtUp(primary_->port());
    })) << "no replica online";
  }

  static absl::StatusOr<std::unique_ptr<Backend>> OpenStatus(
      int port, const std::string& params) {
    absl::StatusOr<RedisOptions> options = ParseRedisUrl(
        absl::StrCat("redis://127.0.0.1:", port, "?max_skew_ms=off", params));
    if (!options.ok()) return options.status();
    return OpenRedisBackend(*options);
  }

  static std::unique_ptr<Backend> Open(int port, const std::string& params) {
    absl::StatusOr<std::unique_ptr<Backend>> backend = OpenStatus(port, params);
    EXPECT_TRUE(backend.ok()) << backend.status();
    return backend.ok() ? *std::move(backend) : nullptr;
  }

  std::unique_ptr<RedisServer> primary_;
  std::unique_ptr<RedisServer> replica_;
};

// With the replica online, writes succeed and reach it. (Without WAIT they
// would too, a moment later: the proof that WAIT runs is the tests below.)
TEST_F(WaitTest, WithAReplicaOnlineWritesSucceed) {
  std::unique_ptr<Backend> backend =
      Open(primary_->port(), "&wait=1&wait_timeout_ms=1000");
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({Job("a")}, kT0));
  std::unique_ptr<Backend> on_replica = Open(replica_->port(), "");
  ASSERT_NE(on_replica, nullptr);
  EXPECT_OK(on_replica->Get("a").status());
}

TEST_F(WaitTest, MoreReplicasThanThereAreIsAnUnconfirmedWrite) {
  // Open itself writes (the layout mark), and so already waits.
  absl::StatusOr<std::unique_ptr<Backend>> opened =
      OpenStatus(primary_->port(), "&wait=2&wait_timeout_ms=1000");
  EXPECT_THAT(opened, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_TRUE(IsUnconfirmedWrite(opened.status())) << opened.status();
  EXPECT_THAT(std::string(opened.status().message()),
              HasSubstr("1 of 2 replicas confirmed it"));
}

TEST_F(WaitTest, ALostReplicaMakesWritesUnconfirmedButTheyStand) {
  std::unique_ptr<Backend> backend =
      Open(primary_->port(), "&wait=1&wait_timeout_ms=1000");
  ASSERT_NE(backend, nullptr);
  replica_->Kill();
  absl::Status added = backend->Add({Job("b")}, kT0);
  EXPECT_THAT(added, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_TRUE(IsUnconfirmedWrite(added)) << added;
  EXPECT_THAT(std::string(added.message()),
              HasSubstr("0 of 1 replicas confirmed it"));
  // The change was made on the primary.
  EXPECT_OK(backend->Get("b").status());
  // Calls that only read do not wait, so they still succeed.
  EXPECT_OK(backend->Stats("mail").status());
  EXPECT_OK(backend->List("mail", JobState::kReady, 10).status());
  // A failure that is not about replication is not marked.
  EXPECT_FALSE(IsUnconfirmedWrite(absl::UnavailableError("x")));
}

TEST(WaitOptionsTest, TheWaitMustEndBeforeTheCommandTimeout) {
  ASSERT_OK_AND_ASSIGN(
      RedisOptions o,
      ParseRedisUrl("redis://h:1?wait=1&wait_timeout_ms=2000&timeout_ms=2000"));
  EXPECT_EQ(o.wait_replicas, 1);
  EXPECT_EQ(o.wait_timeout, absl::Milliseconds(2000));
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenRedisBackend(o);
  EXPECT_THAT(backend, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(backend.status().message()),
              HasSubstr("shorter than command_timeout"));
}

}  // namespace
}  // namespace delayq
