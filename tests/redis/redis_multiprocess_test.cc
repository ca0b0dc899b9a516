// Copyright delayq authors.
//
// The multi-process suite on Redis: one redis-server for the test binary, a
// fresh namespace per case, and processes that ack a batch's last jobs at
// the same moment, killed or not (tests/testing/batch_rounds.h). Then what
// only Redis does: a subscription connection the server kills comes back,
// and its consumer misses nothing.

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "backends/redis/internal/keys.h"
#include "delayq/open.h"
#include "gtest/gtest.h"
#include "tests/multiprocess/multiprocess_suite.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/batch_rounds.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::FanInTest;
using ::delayq::testing::MultiProcessTest;
using ::delayq::testing::SharedStore;
using ::delayq::testing::SharedStoreName;
using ::delayq::testing::WakeupTest;

const SharedStore kRedis{"redis", testing::FreshRedisUrl};

// A namespace over three hash tags (RedisOptions::shards).
constexpr int kShards = 3;
std::string FreshShardedUrl() {
  return absl::StrCat(testing::FreshRedisUrl(), "&shards=", kShards);
}
const SharedStore kRedisSharded{"redis_sharded", FreshShardedUrl};

INSTANTIATE_TEST_SUITE_P(Redis, MultiProcessTest,
                         ::testing::Values(kRedis, kRedisSharded),
                         SharedStoreName);
INSTANTIATE_TEST_SUITE_P(Redis, WakeupTest,
                         ::testing::Values(kRedis, kRedisSharded),
                         SharedStoreName);

// The fan-in's children and parent do not share a hash tag: unsharded only
// (a sharded namespace refuses a job that waits for another shard's).
INSTANTIATE_TEST_SUITE_P(Redis, FanInTest, ::testing::Values(kRedis),
                         SharedStoreName);

class RedisBatchTest : public ::testing::TestWithParam<SharedStore> {
 protected:
  testing::BatchRounds Rounds() const {
    testing::BatchRounds test;
    test.url = GetParam().fresh_url();
    test.open = [url = test.url]() -> std::unique_ptr<Backend> {
      absl::StatusOr<std::unique_ptr<Backend>> backend = OpenBackend(url);
      EXPECT_OK(backend.status());
      return backend.ok() ? *std::move(backend) : nullptr;
    };
    return test;
  }
};
INSTANTIATE_TEST_SUITE_P(Redis, RedisBatchTest,
                         ::testing::Values(kRedis, kRedisSharded),
                         SharedStoreName);

TEST_P(RedisBatchTest, LastAcksOfSeveralProcessesAtOnceReleaseOnce) {
  testing::BatchRounds test = Rounds();
  test.rounds = 30;
  test.processes = 4;
  testing::RunBatchRounds(test);
}

// Each script is one atomic step on the server: a process killed around
// the last acks or the close leaves each either done or not begun.
TEST_P(RedisBatchTest, KillsAroundABatchsLastAcksReleaseItsCompletionOnce) {
  testing::BatchRounds test = Rounds();
  test.kill = true;
  testing::RunBatchRounds(test);
}

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

// The consumer process found nothing on any shard, so it asks none until
// news says which one has work; a job on each shard in turn must wake it
// (its scheduler looks at the store on its own once an hour).
class ShardedWakeupTest : public WakeupTest {};
INSTANTIATE_TEST_SUITE_P(Redis, ShardedWakeupTest,
                         ::testing::Values(kRedisSharded), SharedStoreName);

TEST_P(ShardedWakeupTest, AJobOnAnyShardWakesTheConsumer) {
  auto consumer = StartConsumer("reserve");
  ASSERT_NE(consumer, nullptr);
  int i = 0;
  for (int shard : {2, 0, 1, 2}) {
    // An id of the shard: "w<i>", with x's added until it falls there.
    JobOptions options;
    options.id = absl::StrCat("w", i++);
    while (redis_internal::ShardOfJob(options.id, kShards) != shard) {
      options.id += "x";
    }
    ASSERT_OK(producer_->Enqueue("mail", Now(), options).status());
    ExpectGot(*consumer, options.id,
              absl::StrCat("enqueue to reserve, shard ", shard));
  }
}

}  // namespace
}  // namespace delayq
