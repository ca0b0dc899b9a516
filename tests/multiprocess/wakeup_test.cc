// Copyright delayq authors.
//
// Wake-ups cross processes: a consumer in another process, whose scheduler
// looks at the store on its own only once an hour, gets a job that this
// process enqueues, a delayed job earlier than anything it knew, and a job
// whose lease a third process let expire, within the test's patience. Only
// the store's news (Backend::Subscribe()) can wake it that soon. Run on every
// store that processes share.
//
// The latencies are printed, not asserted: the machines are shared.

#include <hiredis/hiredis.h>
#include <unistd.h>

#include <cstdio>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "delayq/delayq.h"
#include "gtest/gtest.h"
#include "tests/testing/child_process.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

using ::delayq::testing::ChildProcess;

constexpr absl::Duration kPatience = absl::Seconds(10);
constexpr char kWorker[] = "tests/multiprocess/wakeup_worker";

enum class Store { kSqlite, kRedis };

std::string StoreName(const ::testing::TestParamInfo<Store>& info) {
  return info.param == Store::kSqlite ? "Sqlite" : "Redis";
}

std::string Now() { return absl::StrCat(absl::ToUnixMicros(absl::Now())); }

class WakeupTest : public ::testing::TestWithParam<Store> {
 protected:
  static void SetUpTestSuite() {
    auto server = testing::RedisServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    redis_ = server->release();
  }
  static void TearDownTestSuite() {
    delete redis_;
    redis_ = nullptr;
  }

  void SetUp() override {
    static int n = 0;
    const std::string name = absl::StrCat("wakeup-", getpid(), "-", ++n);
    url_ =
        GetParam() == Store::kSqlite
            ? absl::StrCat("sqlite:", testing::FreshDbPath(name))
            : absl::StrCat("redis://127.0.0.1:", redis_->port(),
                           "?namespace=", name);
    producer_ = OpenScheduler();
  }

  // A scheduler of this process on the store.
  std::unique_ptr<Scheduler> OpenScheduler() {
    auto store = OpenBackend(url_);
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return nullptr;
    SchedulerOptions options;
    options.poll_interval = absl::Hours(1);
    options.news_poll_interval = absl::Hours(1);
    auto scheduler = Scheduler::Create(*std::move(store), options);
    EXPECT_TRUE(scheduler.ok()) << scheduler.status();
    return scheduler.ok() ? *std::move(scheduler) : nullptr;
  }

  // Starts a consumer process and waits until it has looked at the store
  // and found nothing.
  std::unique_ptr<ChildProcess> StartConsumer(const std::string& mode,
                                              const std::string& topic) {
    auto child = std::make_unique<ChildProcess>(
        std::vector<std::string>{kWorker, url_, mode, topic});
    EXPECT_TRUE(child->started());
    std::optional<std::string> line = child->ReadLine(kPatience);
    EXPECT_EQ(line.value_or("(nothing)"), "looked");
    return child;
  }

  // Waits for the consumer to get job `id`; prints how long it took.
  void ExpectGot(ChildProcess& child, const std::string& id,
                 const std::string& what) {
    std::optional<std::string> line = child.ReadLine(kPatience);
    ASSERT_TRUE(line.has_value()) << what << ": the consumer got nothing";
    std::vector<std::string> f = absl::StrSplit(*line, ' ');
    ASSERT_EQ(f.size(), 3u) << *line;
    EXPECT_EQ(f[0], "got");
    EXPECT_EQ(f[1], id);
    int64_t micros = 0;
    EXPECT_TRUE(absl::SimpleAtoi(f[2], &micros));
    std::printf("%s on %s: %.3f ms\n", what.c_str(),
                StoreName({GetParam(), 0}).c_str(), micros / 1000.0);
  }

  static testing::RedisServer* redis_;
  std::string url_;
  std::unique_ptr<Scheduler> producer_;
};

testing::RedisServer* WakeupTest::redis_ = nullptr;

TEST_P(WakeupTest, BlockedReserveGetsAJobOfAnotherProcess) {
  auto consumer = StartConsumer("reserve", "mail");
  JobOptions options;
  options.id = "j1";
  ASSERT_OK(producer_->Enqueue("mail", Now(), options).status());
  ExpectGot(*consumer, "j1", "enqueue to reserve");
}

TEST_P(WakeupTest, IdleHandlerGetsAJobOfAnotherProcess) {
  auto consumer = StartConsumer("handle", "mail");
  JobOptions options;
  options.id = "j1";
  ASSERT_OK(producer_->Enqueue("mail", Now(), options).status());
  ExpectGot(*consumer, "j1", "enqueue to handler start");
}

TEST_P(WakeupTest, DelayedJobEarlierThanAnythingTheConsumerKnew) {
  JobOptions later;
  later.id = "later";
  later.delay = absl::Minutes(30);
  ASSERT_OK(producer_->Enqueue("mail", Now(), later).status());
  auto consumer = StartConsumer("reserve", "mail");
  JobOptions soon;
  soon.id = "soon";
  const absl::Time due = absl::Now() + absl::Milliseconds(200);
  soon.run_at = due;
  ASSERT_OK(
      producer_->Enqueue("mail", absl::StrCat(absl::ToUnixMicros(due)), soon)
          .status());
  ExpectGot(*consumer, "soon", "due time to reserve");
}

// A third process holds the job and stalls; this process's own consumer,
// which never saw the lease, gets the job when the lease expires.
TEST_P(WakeupTest, ExpiredLeaseOfAnotherProcess) {
  std::unique_ptr<Scheduler> consumer = OpenScheduler();
  ASSERT_NE(consumer, nullptr);
  auto holder = std::make_unique<ChildProcess>(
      std::vector<std::string>{kWorker, url_, "hold", "mail"});
  ASSERT_EQ(holder->ReadLine(kPatience).value_or("(nothing)"), "looked");
  JobOptions options;
  options.id = "j1";
  options.ttr = absl::Milliseconds(300);
  ASSERT_OK(producer_->Enqueue("mail", Now(), options).status());
  ASSERT_TRUE(holder->ReadLineStartingWith("got j1", kPatience).has_value());
  const absl::Time deadline = absl::Now() + absl::Milliseconds(300);

  auto reserved = std::async(std::launch::async, [&] {
    return consumer->Reserve("mail", absl::Hours(1));
  });
  ASSERT_EQ(reserved.wait_for(absl::ToChronoSeconds(kPatience)),
            std::future_status::ready)
      << "the expired lease was not redelivered";
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> lease, reserved.get());
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->job.id, "j1");
  EXPECT_EQ(lease->job.attempts, 2);
  std::printf("lease deadline to redelivery on %s: about %.3f ms\n",
              StoreName({GetParam(), 0}).c_str(),
              absl::ToDoubleMilliseconds(absl::Now() - deadline));
}

INSTANTIATE_TEST_SUITE_P(Stores, WakeupTest,
                         ::testing::Values(Store::kSqlite, Store::kRedis),
                         StoreName);

// Redis: a subscription connection killed by the server comes back, and the
// consumer misses nothing.
class RedisWakeupTest : public WakeupTest {};

void KillPubSubClients(int port) {
  redisContext* c = redisConnect("127.0.0.1", port);
  ASSERT_TRUE(c != nullptr && c->err == 0);
  auto* reply =
      static_cast<redisReply*>(redisCommand(c, "CLIENT KILL TYPE pubsub"));
  ASSERT_NE(reply, nullptr);
  ASSERT_EQ(reply->type, REDIS_REPLY_INTEGER);
  EXPECT_GE(reply->integer, 1) << "no subscription connection to kill";
  freeReplyObject(reply);
  redisFree(c);
}

TEST_P(RedisWakeupTest, NothingIsMissedAfterTheSubscriptionIsKilled) {
  auto consumer = StartConsumer("reserve", "mail");
  KillPubSubClients(redis_->port());
  JobOptions options;
  options.id = "j1";
  ASSERT_OK(producer_->Enqueue("mail", Now(), options).status());
  ExpectGot(*consumer, "j1", "enqueue to reserve after CLIENT KILL");
  // The subscription is back: the next job's news arrives as well.
  options.id = "j2";
  ASSERT_OK(producer_->Enqueue("mail", Now(), options).status());
  ExpectGot(*consumer, "j2", "enqueue to reserve, resubscribed");
}

INSTANTIATE_TEST_SUITE_P(Redis, RedisWakeupTest,
                         ::testing::Values(Store::kRedis), StoreName);

}  // namespace
}  // namespace delayq
