// Copyright delayq authors.
//
// News of the Redis store (Backend::Subscribe()): the news conformance
// suite (tests/conformance/news_conformance.h) on a namespace, and what only
// this store does: the horizon NextDue() keeps, the channel's messages, the
// subscription's connection through kills, restarts and server time.

#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "backends/redis/backend_impl.h"
#include "backends/redis/internal/news.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/conformance/news_conformance.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/news_recorder.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace {

using ::delayq::testing::FreshRedisOptions;
using ::delayq::testing::NewsConformanceTest;
using ::delayq::testing::NewsPair;
using ::delayq::testing::NewsStore;
using ::delayq::testing::RawCommand;
using ::delayq::testing::RedisServer;
using ::delayq::testing::SharedRedisServer;
using ::delayq::testing::StatusIs;
using ::delayq::testing::TestJob;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
constexpr absl::Duration kWait = absl::Seconds(5);

const auto Ready = testing::NewsRecorder::Ready;
const auto Due = testing::NewsRecorder::Due;

NewsPair OpenPair() {
  const RedisOptions options = FreshRedisOptions();
  return testing::OpenNewsPair([&] { return OpenRedisBackend(options); },
                               options.ns);
}

const NewsStore kRedisNews{"redis", OpenPair};
std::string Name(const ::testing::TestParamInfo<NewsStore>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Redis, NewsConformanceTest,
                         ::testing::Values(kRedisNews), Name);

// What only the Redis store does: the horizon NextDue() keeps, the channel's
// messages, the subscription's connection.
class RedisNewsTest : public NewsConformanceTest {
 protected:
  int port() const { return SharedRedisServer().port(); }
  const std::string& channel() const {
    return static_cast<const RedisBackend&>(*subscriber_).news_channel();
  }
};
INSTANTIATE_TEST_SUITE_P(Redis, RedisNewsTest, ::testing::Values(kRedisNews),
                         Name);

// NextDue() tells the horizon what is pending, so a job later than what
// subscribers were told becomes news once the earlier ones are gone.
TEST_P(RedisNewsTest, NextDueMovesTheHorizonToWhatIsPending) {
  ASSERT_OK(store_->Add({MakeJob("d30", "t", kT0 + absl::Seconds(30)),
                         MakeJob("d40", "t", kT0 + absl::Seconds(40))},
                        kT0));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(30)));
  ASSERT_OK(store_->Cancel(Id("d30"), kT0));
  ASSERT_OK(store_->Cancel(Id("d40"), kT0));
  ASSERT_OK(store_->Add({MakeJob("d45", "t", kT0 + absl::Seconds(45))}, kT0));
  EXPECT_THAT(Settle(), IsEmpty()) << "later than +30 s";
  ASSERT_OK_AND_ASSIGN(absl::Time next, subscriber_->NextDue());
  EXPECT_EQ(next, kT0 + absl::Seconds(45));
  ASSERT_OK(store_->Add({MakeJob("d44", "t", kT0 + absl::Seconds(44))}, kT0));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(44))));
}

TEST_P(RedisNewsTest, NextDueWithNothingPendingForgetsTheHorizon) {
  ASSERT_OK(store_->Add({MakeJob("d", "t", kT0 + absl::Seconds(60))}, kT0));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(60)));
  ASSERT_OK(store_->Cancel(Id("d"), kT0));
  ASSERT_OK_AND_ASSIGN(absl::Time next, subscriber_->NextDue());
  EXPECT_EQ(next, absl::InfiniteFuture());
  ASSERT_OK(store_->Add({MakeJob("e", "t", kT0 + absl::Seconds(90))}, kT0));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(90))));
}

TEST_P(RedisNewsTest, MessagesThatAreNotNewsAreIgnored) {
  for (const char* junk : {"", "r", "d", "d12x", "d 12", "d+12", "x1", "dd"}) {
    EXPECT_THAT(RawCommand(port(), {"SPUBLISH", channel(), junk}),
                ElementsAre("1"));
  }
  EXPECT_THAT(Settle(), IsEmpty());
  EXPECT_THAT(RawCommand(port(), {"SPUBLISH", channel(), "d-5"}),
              ElementsAre("1"));
  EXPECT_EQ(recorder_.Next(),
            recorder_.Describe(StoreNews{StoreNews::Kind::kDue, "",
                                         absl::FromUnixMicros(-5)}));
}

TEST_P(RedisNewsTest, ResyncAfterTheConnectionDropsThenNewsAgain) {
  const std::vector<std::string> killed =
      RawCommand(port(), {"CLIENT", "KILL", "TYPE", "pubsub"});
  ASSERT_THAT(killed, ElementsAre("1")) << "one subscriber on the server";
  EXPECT_EQ(recorder_.Next(), "resync");
  ASSERT_OK(store_->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
}

TEST(RedisNewsServerTimeTest, TimesAreTheServers) {
  RedisOptions options = FreshRedisOptions();
  options.time_source = RedisOptions::TimeSource::kServer;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> store,
                       OpenRedisBackend(options));
  testing::NewsRecorder recorder(kT0);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NewsSubscription> subscription,
                       store->Subscribe(recorder.Callback()));
  // A caller clock an hour behind: the delay keeps its length on the
  // server's clock, and the news gives the time stored.
  const absl::Time behind = absl::Now() - absl::Hours(1);
  ASSERT_OK(store->Add({TestJob("d", "t", behind + absl::Minutes(5))}, behind));
  ASSERT_OK_AND_ASSIGN(Job d, store->Get("d"));
  EXPECT_EQ(recorder.Next(),
            recorder.Describe(StoreNews{StoreNews::Kind::kDue, "", d.run_at}));
  EXPECT_GT(d.run_at, absl::Now());
  ASSERT_OK(store->Add({TestJob("r", "t", behind)}, behind));
  EXPECT_EQ(recorder.Next(), Ready("t"));
}

TEST(RedisNewsParseTest, ParsesReadyDueAndSchedules) {
  std::optional<StoreNews> n = redis_internal::ParseNews("rorders");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->kind, StoreNews::Kind::kReady);
  EXPECT_EQ(n->topic, "orders");
  n = redis_internal::ParseNews("d1700000000123456");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->kind, StoreNews::Kind::kDue);
  EXPECT_EQ(n->at, absl::FromUnixMicros(1700000000123456));
  EXPECT_FALSE(redis_internal::ParseNews("d17x").has_value());
  EXPECT_FALSE(redis_internal::ParseNews("r").has_value());
  n = redis_internal::ParseNews("snightly");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->kind, StoreNews::Kind::kSchedules);
  EXPECT_FALSE(redis_internal::ParseNews("x1").has_value());
}

// The subscription's own server, to stop and kill.
class RedisNewsOutageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, RedisServer::Start());
    options_.port = server_->port();
    options_.ns = "news-outage";
    options_.max_clock_skew = absl::InfiniteDuration();  // simulated times
    // Generous, so a destructor that waited for a timeout would show.
    options_.connect_timeout = absl::Seconds(2);
    options_.command_timeout = absl::Seconds(2);
    const std::vector<std::string> info =
        RawCommand(server_->port(), {"INFO", "server"});
    ASSERT_EQ(info.size(), 1u);
    const size_t at = info[0].find("process_id:");
    ASSERT_NE(at, std::string::npos);
    ASSERT_TRUE(absl::SimpleAtoi(
        info[0].substr(at + 11, info[0].find('\r', at) - at - 11), &pid_));
  }

  void TearDown() override {
    if (pid_ > 0) kill(pid_, SIGCONT);
  }

  // How long destroying `subscription` takes.
  static absl::Duration TimeToDestroy(
      std::unique_ptr<NewsSubscription> subscription) {
    const auto start = std::chrono::steady_clock::now();
    subscription.reset();
    return absl::FromChrono(std::chrono::steady_clock::now() - start);
  }

  std::unique_ptr<RedisServer> server_;
  RedisOptions options_;
  pid_t pid_ = 0;
};

TEST_F(RedisNewsOutageTest, DestroyingReturnsPromptlyWhileTheServerIsStopped) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> store,
                       OpenRedisBackend(options_));
  testing::NewsRecorder recorder(kT0);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NewsSubscription> subscription,
                       store->Subscribe(recorder.Callback()));
  ASSERT_EQ(kill(pid_, SIGSTOP), 0);
  EXPECT_LT(TimeToDestroy(std::move(subscription)), absl::Milliseconds(200));
  ASSERT_EQ(kill(pid_, SIGCONT), 0);
}

TEST_F(RedisNewsOutageTest, ReconnectsAfterARestartAndStopsPromptlyMeanwhile) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> store,
                       OpenRedisBackend(options_));
  testing::NewsRecorder recorder(kT0);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NewsSubscription> subscription,
                       store->Subscribe(recorder.Callback()));
  server_->Kill();
  pid_ = 0;
  ASSERT_OK(server_->Restart());
  EXPECT_EQ(recorder.Next(), "resync");
  ASSERT_OK(store->Add({TestJob("a", "t", kT0)}, kT0));
  EXPECT_EQ(recorder.Next(), Ready("t"));

  // With the server gone, the subscription retries with a backoff; it
  // still stops at once.
  server_->Kill();
  absl::SleepFor(absl::Milliseconds(50));  // a few retries
  EXPECT_LT(TimeToDestroy(std::move(subscription)), absl::Milliseconds(200));
  EXPECT_EQ(recorder.Next(absl::Milliseconds(1)), "");
}

TEST_F(RedisNewsOutageTest, SubscribingToAnUnreachableServerFails) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> store,
                       OpenRedisBackend(options_));
  server_->Kill();
  pid_ = 0;
  testing::NewsRecorder recorder(kT0);
  EXPECT_THAT(store->Subscribe(recorder.Callback()).status(),
              StatusIs(absl::StatusCode::kUnavailable));
}

}  // namespace
}  // namespace delayq
