// Copyright delayq authors.
//
// News of the Redis store (Backend::Subscribe()): one backend subscribes,
// a second one on the same namespace, as another process would, changes
// the store, and the news must arrive — edges only, with the exact times.
// "No news" is checked without sleeping: a sentinel job on a fresh topic is
// added after the change, and its kReady must be the next news.

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
#include "backends/redis/news.h"
#include "backends/redis/redis_backend_impl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/news_recorder.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::FreshRedisOptions;
using ::delayq::testing::RawCommand;
using ::delayq::testing::RedisServer;
using ::delayq::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
constexpr absl::Duration kWait = absl::Seconds(5);

NewJob MakeJob(std::string id, std::string topic, absl::Time run_at = kT0,
               absl::Duration ttr = absl::Seconds(30), int max_attempts = 3) {
  NewJob j;
  j.id = std::move(id);
  j.topic = std::move(topic);
  j.payload = "p";
  j.run_at = run_at;
  j.ttr = ttr;
  j.max_attempts = max_attempts;
  return j;
}

const auto Ready = testing::NewsRecorder::Ready;
const auto Due = testing::NewsRecorder::Due;

class RedisNewsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_ = FreshRedisOptions();
    ASSERT_OK_AND_ASSIGN(subscriber_, RedisBackend::Open(options_));
    ASSERT_OK_AND_ASSIGN(store_, RedisBackend::Open(options_));
    ASSERT_OK_AND_ASSIGN(subscription_,
                         subscriber_->Subscribe(recorder_.Callback()));
    ASSERT_NE(subscription_, nullptr);
  }

  void TearDown() override { subscription_.reset(); }

  // Every news that arrives before a sentinel added now, in order; fails
  // the test if the sentinel does not come.
  std::vector<std::string> Settle() {
    const std::string topic = absl::StrCat("sentinel-", ++sentinels_);
    EXPECT_OK(store_->Add({MakeJob(topic, topic)}, kT0));
    std::vector<std::string> before;
    for (;;) {
      std::string n = recorder_.Next();
      if (n.empty()) {
        ADD_FAILURE() << "the sentinel's news did not come";
        return before;
      }
      if (n == Ready(topic)) return before;
      before.push_back(n);
    }
  }

  Lease ReserveOne(absl::string_view topic, absl::Time now) {
    absl::StatusOr<std::vector<Lease>> leases = store_->Reserve(topic, 1, now);
    EXPECT_OK(leases.status());
    if (!leases.ok() || leases->size() != 1) {
      ADD_FAILURE() << "nothing to reserve in " << topic;
      return Lease();
    }
    return (*leases)[0];
  }

  RedisOptions options_;
  std::unique_ptr<RedisBackend> subscriber_;
  std::unique_ptr<RedisBackend> store_;  // "another process"
  testing::NewsRecorder recorder_{kT0};
  std::unique_ptr<NewsSubscription> subscription_;
  int sentinels_ = 0;
};

TEST_F(RedisNewsTest, ReadyIsAnnouncedOnlyWhenTheReadySetWasEmpty) {
  ASSERT_OK(store_->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  ASSERT_OK(store_->Add({MakeJob("b", "t")}, kT0));
  EXPECT_THAT(Settle(), IsEmpty()) << "t already had a ready job";
  // One announcement per topic per call, however many jobs it adds.
  ASSERT_OK(store_->Add({MakeJob("c", "u"), MakeJob("d", "u"),
                         MakeJob("e", "t"), MakeJob("f", "v")},
                        kT0));
  EXPECT_THAT(Settle(), ElementsAre(Ready("u"), Ready("v")));
}

TEST_F(RedisNewsTest, DueIsAnnouncedWhenEarlierThanTheHorizon) {
  // No horizon yet: the first delayed job is news.
  ASSERT_OK(store_->Add({MakeJob("d60", "t", kT0 + absl::Seconds(60))}, kT0));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(60)));
  ASSERT_OK(store_->Add({MakeJob("d120", "t", kT0 + absl::Seconds(120))}, kT0));
  EXPECT_THAT(Settle(), IsEmpty()) << "later than what subscribers know";
  // A batch announces its earliest run_at, once.
  ASSERT_OK(store_->Add({MakeJob("d40", "t", kT0 + absl::Seconds(40)),
                         MakeJob("d30", "t", kT0 + absl::Seconds(30)),
                         MakeJob("d50", "t", kT0 + absl::Seconds(50))},
                        kT0));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(30))));

  // Once the job at +30 s is gone, a job at +45 s is still later than what
  // subscribers were told; after NextDue() reads +40 s it is not.
  ASSERT_OK(store_->Cancel("d30", kT0));
  ASSERT_OK(store_->Cancel("d40", kT0));
  ASSERT_OK(store_->Add({MakeJob("d45", "t", kT0 + absl::Seconds(45))}, kT0));
  EXPECT_THAT(Settle(), IsEmpty());
  ASSERT_OK_AND_ASSIGN(absl::Time next, subscriber_->NextDue());
  EXPECT_EQ(next, kT0 + absl::Seconds(45));
  ASSERT_OK(store_->Add({MakeJob("d44", "t", kT0 + absl::Seconds(44))}, kT0));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(44))));

  // A horizon that has passed says nothing: the next time stored is news
  // even though it is later.
  ASSERT_OK(store_->Add({MakeJob("d200", "t", kT0 + absl::Seconds(200))},
                        kT0 + absl::Seconds(44)));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(200))));
}

TEST_F(RedisNewsTest, NextDueWithNothingPendingForgetsTheHorizon) {
  ASSERT_OK(store_->Add({MakeJob("d", "t", kT0 + absl::Seconds(60))}, kT0));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(60)));
  ASSERT_OK(store_->Cancel("d", kT0));
  ASSERT_OK_AND_ASSIGN(absl::Time next, subscriber_->NextDue());
  EXPECT_EQ(next, absl::InfiniteFuture());
  ASSERT_OK(store_->Add({MakeJob("e", "t", kT0 + absl::Seconds(90))}, kT0));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(90))));
}

TEST_F(RedisNewsTest, PromotionAndExpiryIntoAnEmptyReadySetAreAnnounced) {
  ASSERT_OK(store_->Add({MakeJob("p", "t", kT0 + absl::Seconds(10))}, kT0));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(10)));
  ASSERT_OK_AND_ASSIGN(PromoteResult r,
                       store_->PromoteDue(kT0 + absl::Seconds(10), 10));
  ASSERT_EQ(r.transitions.size(), 1u);
  EXPECT_EQ(recorder_.Next(), Ready("t"));

  // The lease's deadline is news too (the horizon at +10 s has passed).
  const Lease lease = ReserveOne("t", kT0 + absl::Seconds(10));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(40)));
  ASSERT_OK_AND_ASSIGN(r, store_->PromoteDue(kT0 + absl::Seconds(40), 10));
  ASSERT_EQ(r.transitions.size(), 1u);
  EXPECT_EQ(r.transitions[0].kind, Transition::Kind::kExpired);
  EXPECT_EQ(recorder_.Next(), Ready("t"));

  // Reserve() promotes its topic's due jobs itself.
  ASSERT_OK(store_->Add({MakeJob("q", "u", kT0 + absl::Seconds(50))}, kT0));
  EXPECT_THAT(Settle(), IsEmpty()) << "later than the lease at +40 s";
  std::vector<Transition> moved;
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> leases,
      store_->Reserve("u", 2, kT0 + absl::Seconds(60), &moved));
  ASSERT_EQ(moved.size(), 1u);
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_THAT(Settle(), ElementsAre(Ready("u"), Due(absl::Seconds(90))));
}

TEST_F(RedisNewsTest, LeaseDeadlinesAreAnnouncedWhenEarlierThanTheHorizon) {
  ASSERT_OK(store_->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  ReserveOne("t", kT0);
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(30)));
  ASSERT_OK(store_->Add({MakeJob("b", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t")) << "the reservation emptied t";
  ReserveOne("t", kT0 + absl::Seconds(1));
  EXPECT_THAT(Settle(), IsEmpty()) << "+31 s is later than +30 s";
  // A batch announces its earliest deadline.
  ASSERT_OK(store_->Add({MakeJob("c", "t", kT0, absl::Seconds(20)),
                         MakeJob("d", "t", kT0, absl::Seconds(5)),
                         MakeJob("e", "t", kT0, absl::Seconds(10))},
                        kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       store_->Reserve("t", 3, kT0 + absl::Seconds(2)));
  ASSERT_EQ(leases.size(), 3u);
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(7))));
  // Touch() moves a deadline: news when the horizon (+7 s) has passed.
  ASSERT_OK_AND_ASSIGN(
      absl::Time deadline,
      store_->Touch(leases[0].job.id, leases[0].token, kT0 + absl::Seconds(8)));
  EXPECT_EQ(deadline, kT0 + absl::Seconds(28));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(28))));
}

TEST_F(RedisNewsTest, RetriesReleasesAndKicksAreAnnounced) {
  ASSERT_OK(store_->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  Lease l = ReserveOne("t", kT0);
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(30)));
  // A retry due at once goes straight back to ready.
  ASSERT_OK_AND_ASSIGN(FailOutcome out,
                       store_->Fail("a", l.token, "boom", kT0, kT0));
  ASSERT_EQ(out, FailOutcome::kRetry);
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  l = ReserveOne("t", kT0);
  ASSERT_OK(store_->Release("a", l.token, kT0, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  // A delayed retry earlier than the horizon (+30 s) is due news.
  l = ReserveOne("t", kT0);
  ASSERT_OK_AND_ASSIGN(
      out, store_->Fail("a", l.token, "boom", kT0 + absl::Seconds(3), kT0));
  ASSERT_EQ(out, FailOutcome::kRetry);
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(3)));
  // So is a delayed release.
  ASSERT_OK(store_->Add({MakeJob("b", "u")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("u"));
  l = ReserveOne("u", kT0);
  ASSERT_OK(store_->Release("b", l.token, kT0 + absl::Seconds(2), kT0));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(2))));

  // Kicks of dead jobs.
  ASSERT_OK(store_->Add({MakeJob("x", "k", kT0, absl::Seconds(30), 1),
                         MakeJob("y", "k", kT0, absl::Seconds(30), 1)},
                        kT0));
  EXPECT_EQ(recorder_.Next(), Ready("k"));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> two,
                       store_->Reserve("k", 2, kT0 + absl::Seconds(1)));
  ASSERT_EQ(two.size(), 2u);
  for (const Lease& d : two) {
    ASSERT_OK_AND_ASSIGN(out, store_->Fail(d.job.id, d.token, "boom", kT0,
                                           kT0 + absl::Seconds(1)));
    ASSERT_EQ(out, FailOutcome::kDead);
  }
  EXPECT_THAT(Settle(), IsEmpty()) << "deaths are no news";
  ASSERT_OK(store_->KickJob("x", kT0 + absl::Seconds(1)));
  EXPECT_EQ(recorder_.Next(), Ready("k"));
  ReserveOne("k", kT0 + absl::Seconds(1));
  ASSERT_OK_AND_ASSIGN(int kicked, store_->Kick("k", 10, kT0));
  EXPECT_EQ(kicked, 1);
  EXPECT_THAT(Settle(), ElementsAre(Ready("k")));
}

TEST_F(RedisNewsTest, MessagesThatAreNotNewsAreIgnored) {
  for (const char* junk : {"", "r", "d", "d12x", "d 12", "d+12", "x1", "dd"}) {
    EXPECT_THAT(RawCommand(options_.port,
                           {"SPUBLISH", subscriber_->news_channel(), junk}),
                ElementsAre("1"));
  }
  EXPECT_THAT(Settle(), IsEmpty());
  EXPECT_THAT(RawCommand(options_.port,
                         {"SPUBLISH", subscriber_->news_channel(), "d-5"}),
              ElementsAre("1"));
  EXPECT_EQ(recorder_.Next(),
            recorder_.Describe(StoreNews{StoreNews::Kind::kDue, "",
                                         absl::FromUnixMicros(-5)}));
}

TEST_F(RedisNewsTest, ResyncAfterTheConnectionDropsThenNewsAgain) {
  const std::vector<std::string> killed =
      RawCommand(options_.port, {"CLIENT", "KILL", "TYPE", "pubsub"});
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
  ASSERT_OK(store->Add({MakeJob("d", "t", behind + absl::Minutes(5))}, behind));
  ASSERT_OK_AND_ASSIGN(Job d, store->Get("d"));
  EXPECT_EQ(recorder.Next(),
            recorder.Describe(StoreNews{StoreNews::Kind::kDue, "", d.run_at}));
  EXPECT_GT(d.run_at, absl::Now());
  ASSERT_OK(store->Add({MakeJob("r", "t", behind)}, behind));
  EXPECT_EQ(recorder.Next(), Ready("t"));
}

TEST(RedisNewsParseTest, ParsesReadyAndDue) {
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
  EXPECT_FALSE(redis_internal::ParseNews("s1").has_value());
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
  ASSERT_OK(store->Add({MakeJob("a", "t")}, kT0));
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
