// Copyright delayq authors.
//
// Redis 6 ACL users on a real server: user:password@ in the URL sends
// AUTH user password on every connection, the news subscription's included.

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "delayq/redis_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/news_recorder.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::NewsRecorder;
using ::delayq::testing::RawCommand;
using ::delayq::testing::RedisServer;
using ::delayq::testing::StatusIs;
using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

class AclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // "jobs" may do everything; the default user stays open for the
    // harness's own PING.
    ASSERT_OK_AND_ASSIGN(
        server_, RedisServer::Start(
                     {"--user", "jobs", "on", ">s3cret", "~*", "&*", "+@all"}));
  }

  absl::StatusOr<std::unique_ptr<Backend>> Open(
      const std::string& credentials) {
    absl::StatusOr<RedisOptions> options = ParseRedisUrl(
        absl::StrCat("redis://", credentials, "@127.0.0.1:", server_->port(),
                     "?max_skew_ms=off"));
    if (!options.ok()) return options.status();
    return OpenRedisBackend(*options);
  }

  std::unique_ptr<RedisServer> server_;
};

TEST_F(AclTest, EveryConnectionAuthenticatesAsTheUser) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend, Open("jobs:s3cret"));
  NewsRecorder recorder(kT0);
  ASSERT_OK_AND_ASSIGN(auto news, backend->Subscribe(recorder.Callback()));
  NewJob job;
  job.id = "a";
  job.topic = "mail";
  job.run_at = kT0;
  ASSERT_OK(backend->Add({job}, kT0));
  EXPECT_EQ(recorder.Next(), NewsRecorder::Ready("mail"));

  // Every client connection but the one asking is the store's, as "jobs".
  const std::string clients =
      RawCommand(server_->port(), {"CLIENT", "LIST"})[0];
  int ours = 0;
  for (absl::string_view line : absl::StrSplit(clients, '\n')) {
    if (line.empty() || absl::StrContains(line, "cmd=client")) continue;
    EXPECT_THAT(std::string(line), HasSubstr(" user=jobs ")) << line;
    ++ours;
  }
  EXPECT_GE(ours, 2) << clients;  // a pool connection and the subscription
}

TEST_F(AclTest, AWrongPasswordIsPermissionDenied) {
  EXPECT_THAT(Open("jobs:wrong"),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(Open("nobody:s3cret"),
              StatusIs(absl::StatusCode::kPermissionDenied));
}

TEST(AclOptionsTest, AUserWithoutAPasswordIsRefused) {
  RedisOptions options;
  options.username = "jobs";
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenRedisBackend(options);
  EXPECT_THAT(backend, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(backend.status().message()),
              HasSubstr("a username needs a password"));
}

}  // namespace
}  // namespace delayq
