// Copyright delayq authors.
//
// The multi-process suite on Redis: one redis-server for the test binary, a
// fresh namespace per case. Then what only Redis does: a subscription
// connection the server kills comes back, and its consumer misses nothing.

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "gtest/gtest.h"
#include "tests/multiprocess/multiprocess_suite.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::MultiProcessTest;
using ::delayq::testing::SharedStore;
using ::delayq::testing::SharedStoreName;
using ::delayq::testing::WakeupTest;

const SharedStore kRedis{"redis", testing::FreshRedisUrl};

INSTANTIATE_TEST_SUITE_P(Redis, MultiProcessTest, ::testing::Values(kRedis),
                         SharedStoreName);
INSTANTIATE_TEST_SUITE_P(Redis, WakeupTest, ::testing::Values(kRedis),
                         SharedStoreName);

class RedisWakeupTest : public WakeupTest {};
INSTANTIATE_TEST_SUITE_P(Redis, RedisWakeupTest, ::testing::Values(kRedis),
                         SharedStoreName);

TEST_P(RedisWakeupTest, NothingIsMissedAfterTheSubscriptionIsKilled) {
  auto consumer = StartConsumer("reserve");
  ASSERT_NE(consumer, nullptr);
  const std::vector<std::string> killed =
      testing::RawCommand(testing::SharedRedisServer().port(),
                          {"CLIENT", "KILL", "TYPE", "pubsub"});
  int n = 0;
  ASSERT_EQ(killed.size(), 1u);
  ASSERT_TRUE(absl::SimpleAtoi(killed[0], &n)) << killed[0];
  EXPECT_GE(n, 1) << "no subscription connection to kill";
  JobOptions options;
  options.id = "j1";
  ASSERT_OK(producer_->Enqueue("mail", Now(), options).status());
  ExpectGot(*consumer, "j1", "enqueue to reserve after CLIENT KILL");
  // The subscription is back: the next job's news arrives as well.
  options.id = "j2";
  ASSERT_OK(producer_->Enqueue("mail", Now(), options).status());
  ExpectGot(*consumer, "j2", "enqueue to reserve, resubscribed");
}

}  // namespace
}  // namespace delayq
