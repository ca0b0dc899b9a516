// Copyright delayq authors.
//
// Redis Sentinel on real servers: a primary, a replica and three sentinels
// (quorum 2). The store reaches the primary the sentinels name; after a
// failover, forced or caused by killing the primary, calls fail with
// Unavailable (or time out) for a while and then reach the new primary, and
// the news subscription follows it, with no restart.

#include <atomic>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "delayq/redis_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/common/status_macros.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/eventually.h"
#include "tests/testing/news_recorder.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace {

using ::delayq::testing::BackendConformanceTest;
using ::delayq::testing::Eventually;
using ::delayq::testing::NewsRecorder;
using ::delayq::testing::RawCommand;
using ::delayq::testing::RedisServer;
using ::delayq::testing::ReplicaCaughtUp;

constexpr char kMaster[] = "dq-primary";
const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

// The value after `field` in a flat field/value reply, or "".
std::string Field(const std::vector<std::string>& reply,
                  const std::string& field) {
  for (size_t i = 0; i + 1 < reply.size(); i += 2) {
    if (reply[i] == field) return reply[i + 1];
  }
  return "";
}

NewJob Job(const std::string& id, const std::string& topic = "mail") {
  return testing::PlainJob(id, topic, kT0);
}

// Whether the primary on `port` has `n` replicas online.
bool ReplicasOnline(int port, int n) {
  const std::vector<std::string> info =
      RawCommand(port, {"INFO", "replication"});
  if (info.empty()) return false;
  int online = 0;
  for (absl::string_view line : absl::StrSplit(info[0], "\r\n")) {
    if (absl::StartsWith(line, "slave") &&
        absl::StrContains(line, "state=online")) {
      ++online;
    }
  }
  return online == n;
}

// A primary, its replicas and three sentinels (quorum 2) that know them
// all and each other.
struct Deployment {
  std::unique_ptr<RedisServer> primary;
  std::vector<std::unique_ptr<RedisServer>> replicas;
  std::vector<std::unique_ptr<RedisServer>> sentinels;

  static absl::StatusOr<Deployment> Start(
      const std::vector<std::string>& primary_args, int replicas) {
    Deployment d;
    DQ_ASSIGN_OR_RETURN(d.primary, RedisServer::Start(primary_args));
    for (int i = 0; i < replicas; ++i) {
      DQ_ASSIGN_OR_RETURN(
          auto r, RedisServer::Start({"--replicaof", "127.0.0.1",
                                      absl::StrCat(d.primary->port())}));
      d.replicas.push_back(std::move(r));
    }
    for (int i = 0; i < 3; ++i) {
      DQ_ASSIGN_OR_RETURN(
          auto s, RedisServer::StartSentinel(kMaster, d.primary->port(), 2));
      d.sentinels.push_back(std::move(s));
    }
    // A failover needs replicas the sentinels know, and sentinels that
    // know each other.
    const bool ready = Eventually(absl::Seconds(30), [&] {
      for (const auto& s : d.sentinels) {
        const std::vector<std::string> info =
            RawCommand(s->port(), {"SENTINEL", "MASTER", kMaster});
        if (Field(info, "num-slaves") != absl::StrCat(replicas) ||
            Field(info, "num-other-sentinels") != "2") {
          return false;
        }
      }
      return true;
    });
    if (!ready) {
      return absl::DeadlineExceededError(
          "the sentinels did not find the replicas and each other");
    }
    // And the replicas have synchronised: until then a failover would
    // promote an empty one.
    if (!Eventually(absl::Seconds(30), [&] {
          return ReplicasOnline(d.primary->port(), replicas);
        })) {
      return absl::DeadlineExceededError("the replicas did not synchronise");
    }
    return d;
  }

  // The store's URL, with `params` after '?'.
  std::string Url(const std::string& params = "") const {
    std::vector<std::string> hosts;
    for (const auto& s : sentinels) {
      hosts.push_back(absl::StrCat("127.0.0.1:", s->port()));
    }
    return absl::StrCat("redis+sentinel://", absl::StrJoin(hosts, ","), "/",
                        kMaster, "?max_skew_ms=off&timeout_ms=500", params);
  }
};

// The whole conformance suite through the sentinels, on one deployment for
// the binary and a namespace per test.
const Deployment& SharedDeployment() {
  static const Deployment* d = [] {
    absl::StatusOr<Deployment> started = Deployment::Start({}, 1);
    if (!started.ok()) {
      fprintf(stderr, "FATAL: cannot start the sentinels: %s\n",
              started.status().ToString().c_str());
      abort();
    }
    return new Deployment(*std::move(started));
  }();
  return *d;
}

INSTANTIATE_TEST_SUITE_P(RedisSentinel, BackendConformanceTest,
                         ::testing::Values(testing::BackendFactory{
                             "redis_sentinel",
                             []() -> absl::StatusOr<std::unique_ptr<Backend>> {
                               static std::atomic<int> n{0};
                               DQ_ASSIGN_OR_RETURN(
                                   RedisOptions options,
                                   ParseRedisUrl(SharedDeployment().Url(
                                       absl::StrCat("&namespace=s", getpid(),
                                                    "-", n.fetch_add(1)))));
                               // The suite sends calls of 10,000 jobs; the
                               // failover tests' 500 ms is for them only.
                               options.command_timeout = absl::Seconds(10);
                               return OpenRedisBackend(options);
                             },
                             /*limit_share=*/nullptr, /*model_steps=*/600}),
                         testing::BackendFactoryName);

class SentinelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(d_, Deployment::Start(primary_args_, replicas_));
  }

  RedisServer& primary() { return *d_.primary; }
  RedisServer& replica() { return *d_.replicas[0]; }

  std::unique_ptr<Backend> Open(const std::string& params = "") {
    absl::StatusOr<RedisOptions> options = ParseRedisUrl(d_.Url(params));
    EXPECT_TRUE(options.ok()) << options.status();
    absl::StatusOr<std::unique_ptr<Backend>> backend =
        OpenRedisBackend(*options);
    EXPECT_TRUE(backend.ok()) << backend.status();
    return backend.ok() ? *std::move(backend) : nullptr;
  }

  // SENTINEL FAILOVER, and waits until the sentinels name the replica.
  void ForceFailover() {
    ASSERT_EQ(
        RawCommand(d_.sentinels[0]->port(), {"SENTINEL", "FAILOVER", kMaster})
            .at(0),
        "OK");
    ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
      return NamedPrimary() == replica().port();
    })) << "the sentinels did not promote the replica";
  }

  // The port of the server the sentinels call the primary.
  int NamedPrimary() const {
    const std::vector<std::string> addr =
        RawCommand(d_.sentinels[0]->port(),
                   {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", kMaster});
    int port = 0;
    if (addr.size() == 2) (void)absl::SimpleAtoi(addr[1], &port);
    return port;
  }

  // Adds `job` until a call succeeds; every failure on the way must be one
  // a failover explains.
  void AddThroughFailover(Backend& backend, const NewJob& job) {
    absl::Status last;
    const bool added = Eventually(absl::Seconds(30), [&] {
      last = backend.Add({job}, kT0);
      if (!last.ok()) {
        EXPECT_TRUE(absl::IsUnavailable(last) || absl::IsDeadlineExceeded(last))
            << last;
      }
      return last.ok();
    });
    ASSERT_TRUE(added) << "still failing after 30 s: " << last;
  }

  // Whether job `id` is stored on the server at `port` (read there).
  static bool OnServer(int port, const std::string& id) {
    absl::StatusOr<RedisOptions> options = ParseRedisUrl(
        absl::StrCat("redis://127.0.0.1:", port, "?max_skew_ms=off"));
    if (!options.ok()) return false;
    absl::StatusOr<std::unique_ptr<Backend>> direct =
        OpenRedisBackend(*options);
    return direct.ok() && (*direct)->Get(id).ok();
  }

  // The job is stored on the server at `port` (read there directly).
  void ExpectOnServer(int port, const std::string& id) {
    absl::StatusOr<RedisOptions> options = ParseRedisUrl(
        absl::StrCat("redis://127.0.0.1:", port, "?max_skew_ms=off"));
    ASSERT_TRUE(options.ok()) << options.status();
    absl::StatusOr<std::unique_ptr<Backend>> direct =
        OpenRedisBackend(*options);
    ASSERT_TRUE(direct.ok()) << direct.status();
    EXPECT_OK((*direct)->Get(id).status()) << "on port " << port;
  }

  // Every job id of topic `topic` the store hands out now.
  std::set<std::string> ReserveAll(Backend& backend, const std::string& topic) {
    std::set<std::string> ids;
    absl::StatusOr<std::vector<Lease>> leases =
        backend.Reserve(topic, 100, kT0);
    EXPECT_TRUE(leases.ok()) << leases.status();
    if (leases.ok()) {
      for (const Lease& l : *leases) ids.insert(l.job.id);
    }
    return ids;
  }

  std::vector<std::string> primary_args_;
  int replicas_ = 1;
  Deployment d_;
};

TEST_F(SentinelTest, ReachesThePrimaryTheSentinelsName) {
  std::unique_ptr<Backend> backend = Open();
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({Job("a")}, kT0));
  // Written on the primary, not on the replica.
  EXPECT_EQ(RawCommand(primary().port(), {"ROLE"}).at(0), "master");
  EXPECT_THAT(ReserveAll(*backend, "mail"), ::testing::ElementsAre("a"));
}

TEST_F(SentinelTest, AForcedFailoverIsFollowedWithoutARestart) {
  std::unique_ptr<Backend> backend = Open();
  std::unique_ptr<Backend> producer = Open();
  ASSERT_NE(backend, nullptr);
  ASSERT_NE(producer, nullptr);
  NewsRecorder recorder(kT0);
  ASSERT_OK_AND_ASSIGN(auto news, backend->Subscribe(recorder.Callback()));
  for (int i = 0; i < 5; ++i)
    ASSERT_OK(producer->Add({Job(absl::StrCat("before", i))}, kT0));
  // Acknowledged by the replica, so the failover keeps them.
  ASSERT_TRUE(Eventually(absl::Seconds(10),
                         [&] { return ReplicaCaughtUp(primary().port()); }));

  ASSERT_NO_FATAL_FAILURE(ForceFailover());
  // Once the old primary is a replica too, nothing but the sentinels'
  // answer can lead a call to the new one.
  ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
    return RawCommand(primary().port(), {"ROLE"}).at(0) == "slave";
  })) << "the old primary was not turned into a replica";

  AddThroughFailover(*producer, Job("after"));
  ExpectOnServer(replica().port(), "after");
  EXPECT_EQ(RawCommand(replica().port(), {"ROLE"}).at(0), "master");
  std::set<std::string> expected = {"after"};
  for (int i = 0; i < 5; ++i) expected.insert(absl::StrCat("before", i));
  EXPECT_EQ(ReserveAll(*backend, "mail"), expected);

  // News now comes from the new primary: a topic that gets its first ready
  // job is announced to the subscriber that was opened before the switch.
  ASSERT_TRUE(Eventually(absl::Seconds(10), [&] {
    (void)producer->Add(
        {Job(absl::StrCat("n", absl::ToUnixNanos(absl::Now())), "news-topic")},
        kT0);
    std::string n;
    while (!(n = recorder.Next(absl::Milliseconds(200))).empty()) {
      if (n == NewsRecorder::Ready("news-topic")) return true;
    }
    return false;
  })) << "no news from the new primary";
}

TEST_F(SentinelTest, AKilledPrimaryIsReplacedAndCallsResume) {
  std::unique_ptr<Backend> backend = Open();
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({Job("before")}, kT0));
  ASSERT_TRUE(Eventually(absl::Seconds(10),
                         [&] { return ReplicaCaughtUp(primary().port()); }));

  primary().Kill();
  AddThroughFailover(*backend, Job("after"));
  EXPECT_EQ(NamedPrimary(), replica().port());
  ExpectOnServer(replica().port(), "after");
  EXPECT_EQ(ReserveAll(*backend, "mail"),
            (std::set<std::string>{"before", "after"}));
}

// A primary the sentinels cannot demote (it refuses REPLICAOF), as one cut
// off from them by a partition would stay: after a failover it still
// answers as a primary, with no READONLY and no refused connection. Only
// the sentinels' +switch-master notice can move the store's calls off it.
class StubbornPrimaryTest : public SentinelTest {
 protected:
  void SetUp() override {
    primary_args_ = {"--rename-command", "REPLICAOF", "",
                     "--rename-command", "SLAVEOF",   ""};
    SentinelTest::SetUp();
  }
};

TEST_F(StubbornPrimaryTest, ASwitchNoticeMovesCallsToTheNewPrimary) {
  std::unique_ptr<Backend> backend = Open();
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({Job("before")}, kT0));
  ASSERT_NO_FATAL_FAILURE(ForceFailover());
  ASSERT_EQ(RawCommand(primary().port(), {"ROLE"}).at(0), "master");

  int n = 0;
  EXPECT_TRUE(Eventually(absl::Seconds(10), [&] {
    const std::string id = absl::StrCat("after", n++);
    if (!backend->Add({Job(id)}, kT0).ok()) return false;
    return RawCommand(replica().port(), {"ROLE"}).at(0) == "master" &&
           OnServer(replica().port(), id);
  })) << "calls still go to the old primary";
  EXPECT_EQ(RawCommand(primary().port(), {"ROLE"}).at(0), "master");
}

// Failover under load: one producer adds jobs without pause, and the
// primary is killed after the first 200. Two replicas, so that the one
// promoted still has one to confirm writes.
class SentinelLoadTest : public SentinelTest {
 protected:
  SentinelLoadTest() { replicas_ = 2; }

  struct Outcome {
    std::vector<std::string> returned_ok;  // ids whose Add returned OK
    int refused = 0;                       // Unavailable or DeadlineExceeded
    int unconfirmed = 0;    // made on the primary, too few replicas had it
    absl::Duration outage;  // from the kill to the next Add that returned OK
    std::vector<std::string> lost;  // returned OK, gone after the failover
  };

  Outcome AddThroughKill(Backend& store) {
    Outcome out;
    absl::Time killed_at = absl::InfiniteFuture();
    int after_kill = 0;
    const absl::Time deadline = absl::Now() + absl::Seconds(45);
    for (int i = 0; after_kill < 100 && absl::Now() < deadline; ++i) {
      if (i == 200) {
        primary().Kill();
        killed_at = absl::Now();
      }
      const std::string id = absl::StrCat("p", i);
      const absl::Status s = store.Add({Job(id)}, kT0);
      if (s.ok()) {
        out.returned_ok.push_back(id);
        if (killed_at != absl::InfiniteFuture() && after_kill++ == 0) {
          out.outage = absl::Now() - killed_at;
        }
      } else if (IsUnconfirmedWrite(s)) {
        ++out.unconfirmed;
      } else if (absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)) {
        ++out.refused;
        absl::SleepFor(absl::Milliseconds(20));
      } else {
        ADD_FAILURE() << "add " << id << ": " << s;
      }
    }
    EXPECT_EQ(after_kill, 100) << "adds did not resume within 45 s";
    for (const std::string& id : out.returned_ok) {
      absl::Status got = absl::UnavailableError("not read");
      for (int attempt = 0; attempt < 50 && !got.ok(); ++attempt) {
        got = store.Get(id).status();
        if (absl::IsNotFound(got)) break;
        if (!got.ok()) absl::SleepFor(absl::Milliseconds(100));
      }
      if (absl::IsNotFound(got)) out.lost.push_back(id);
    }
    std::printf(
        "failover under load: %zu adds returned OK, %d refused, %d "
        "unconfirmed, outage %s, %zu lost\n",
        out.returned_ok.size(), out.refused, out.unconfirmed,
        absl::FormatDuration(out.outage).c_str(), out.lost.size());
    RecordProperty("lost", static_cast<int>(out.lost.size()));
    RecordProperty("outage_ms",
                   static_cast<int>(absl::ToInt64Milliseconds(out.outage)));
    return out;
  }
};

TEST_F(SentinelLoadTest, WithWaitNoJobWhoseAddReturnedOkIsLost) {
  std::unique_ptr<Backend> store = Open("&wait=1&wait_timeout_ms=200");
  ASSERT_NE(store, nullptr);
  const Outcome out = AddThroughKill(*store);
  EXPECT_THAT(out.lost, ::testing::IsEmpty());
  EXPECT_NE(NamedPrimary(), primary().port());
}

TEST_F(SentinelLoadTest, WithoutWaitWhatWasLostIsReported) {
  std::unique_ptr<Backend> store = Open();
  ASSERT_NE(store, nullptr);
  // Replication is asynchronous: jobs the dead primary had not yet sent
  // to a replica are gone. How many is reported (the test output and its
  // XML), not asserted: it depends on timing.
  const Outcome out = AddThroughKill(*store);
  EXPECT_GE(out.returned_ok.size(), 300u);
}

TEST(SentinelOpenTest, NoSentinelAnsweringIsUnavailableAndSaysWhy) {
  ASSERT_OK_AND_ASSIGN(RedisOptions options,
                       ParseRedisUrl("redis+sentinel://127.0.0.1:1/nobody?"
                                     "max_skew_ms=off"));
  options.connect_timeout = absl::Milliseconds(200);
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenRedisBackend(options);
  EXPECT_THAT(backend,
              ::delayq::testing::StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(std::string(backend.status().message()),
              ::testing::HasSubstr("no sentinel named the primary 'nobody'"));
}

}  // namespace
}  // namespace delayq
