// Copyright delayq authors.
//
// What the conformance suite cannot see: script reloading, the key layout
// (nothing left behind), the dead-list cap, server time, batch ack, option
// checks and an unreachable server.

#include "delayq/redis_backend.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "backends/redis/backend_impl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace {

using ::delayq::testing::FreshRedisOptions;
using ::delayq::testing::RawCommand;
using ::delayq::testing::SharedRedisServer;
using ::delayq::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// Jobs here get one attempt: a failed one goes dead.
NewJob MakeJob(std::string id, std::string topic, absl::Time run_at = kT0) {
  NewJob j = testing::TestJob(std::move(id), std::move(topic), run_at);
  j.max_attempts = 1;
  return j;
}

// A key of the store `o` opens.
std::string NsKey(const RedisOptions& o, absl::string_view suffix) {
  return absl::StrCat("{", o.ns, "}:", suffix);
}

class RedisBackendTest : public ::testing::Test {
 protected:
  // These tests look at the keys of jobs and topics: the store opens
  // without counts, whose keys CountKeysCarryTheTagAndExpireAfterTheWindow
  // looks at.
  void SetUp() override {
    options_ = FreshRedisOptions();
    options_.counts.enabled = false;
    ASSERT_OK_AND_ASSIGN(backend_, RedisBackend::Open(options_));
  }

  // Every key of this store, sorted.
  std::vector<std::string> Keys() {
    std::vector<std::string> keys = RawCommand(
        options_.port, {"KEYS", absl::StrCat("{", options_.ns, "}:*")});
    std::sort(keys.begin(), keys.end());
    return keys;
  }

  std::string Key(absl::string_view suffix) { return NsKey(options_, suffix); }

  RedisOptions options_;
  std::unique_ptr<RedisBackend> backend_;
};

TEST_F(RedisBackendTest, ReloadsScriptsAfterScriptFlush) {
  ASSERT_OK(backend_->Add({MakeJob("a", "t"), MakeJob("b", "t")}, kT0));
  ASSERT_THAT(RawCommand(options_.port, {"SCRIPT", "FLUSH"}),
              ElementsAre("OK"));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve("t", 2, kT0));
  ASSERT_EQ(leases.size(), 2u);
  ASSERT_THAT(RawCommand(options_.port, {"SCRIPT", "FLUSH"}),
              ElementsAre("OK"));
  // The pipelined path reloads too.
  ASSERT_OK_AND_ASSIGN(std::vector<absl::Status> acked,
                       backend_->AckBatch(leases, kT0));
  EXPECT_OK(acked[0]);
  EXPECT_OK(acked[1]);
  EXPECT_THAT(backend_->Get("a"), StatusIs(absl::StatusCode::kNotFound));
}

// The conformance suite checks what AckBatch() does; here, that a batch
// that empties the namespace leaves only its two lasting keys.
TEST_F(RedisBackendTest, AckBatchLeavesNoKeysOfTheJobsBehind) {
  ASSERT_OK(backend_->Add(
      {MakeJob("a", "t"), MakeJob("b", "t"), MakeJob("other", "u")}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> t, backend_->Reserve("t", 2, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> u, backend_->Reserve("u", 1, kT0));
  ASSERT_EQ(t.size(), 2u);
  ASSERT_EQ(u.size(), 1u);
  ASSERT_OK_AND_ASSIGN(std::vector<absl::Status> acked,
                       backend_->AckBatch({t[0], u[0], t[1]}, kT0));
  EXPECT_THAT(
      acked, ElementsAre(absl::OkStatus(), absl::OkStatus(), absl::OkStatus()));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> topics, backend_->Topics());
  EXPECT_THAT(topics, ::testing::IsEmpty());
  // The news horizon goes once NextDue() finds nothing pending.
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend_->NextDue());
  EXPECT_EQ(next, absl::InfiniteFuture());
  EXPECT_THAT(Keys(), ElementsAre(Key("meta"), Key("seq")));
}

TEST_F(RedisBackendTest, CountKeysCarryTheTagAndExpireAfterTheWindow) {
  options_ = FreshRedisOptions();
  options_.counts.window = absl::Minutes(90);
  ASSERT_OK_AND_ASSIGN(backend_, RedisBackend::Open(options_));
  ASSERT_OK(backend_->Add({MakeJob("a", "t")}, kT0));
  const std::string recent =
      Key(absl::StrCat("counts_recent:", absl::ToUnixMicros(MinuteOf(kT0))));
  EXPECT_THAT(Keys(), ::testing::IsSupersetOf(
                          {recent, Key("count_minutes"), Key("count_recent")}));
  // A minute's counts wait for the totals without a TTL; the first count of
  // a later minute folds them into the totals and into the minute's hash,
  // which expires a window later.
  const absl::Time next = kT0 + absl::Minutes(1);
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> l, backend_->Reserve("t", 1, next));
  const std::string minute =
      Key(absl::StrCat("counts:", absl::ToUnixMicros(MinuteOf(kT0))));
  const std::string next_recent =
      Key(absl::StrCat("counts_recent:", absl::ToUnixMicros(MinuteOf(next))));
  EXPECT_EQ(RawCommand(options_.port, {"TTL", next_recent}),
            std::vector<std::string>{"-1"});
  const std::vector<std::string> ttl =
      RawCommand(options_.port, {"TTL", minute});
  ASSERT_EQ(ttl.size(), 1u);
  EXPECT_GT(std::stoi(ttl[0]), 90 * 60 - 60);
  EXPECT_LE(std::stoi(ttl[0]), 90 * 60);
  // The totals, the lists of minutes and the minutes are kept; nothing else
  // of the job.
  ASSERT_OK(backend_->Ack("a", l[0].token, /*result=*/"", next));
  ASSERT_OK(backend_->NextDue().status());
  EXPECT_THAT(Keys(), ElementsAre(Key("count_minutes"), Key("count_recent"),
                                  Key("count_totals"), minute, next_recent,
                                  Key("meta"), Key("seq")));
}

TEST_F(RedisBackendTest, EveryKeyCarriesTheNamespaceHashTag) {
  ASSERT_OK(backend_->Add(
      {MakeJob("a", "t"), MakeJob("d", "t", kT0 + absl::Minutes(1))}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> l, backend_->Reserve("t", 1, kT0));
  // Every job is a record in "jobs"; a delayed one is in its topic's set,
  // and the topic in "due".
  EXPECT_THAT(Keys(),
              ElementsAre(Key("due"), Key("horizon"), Key("jobs"), Key("meta"),
                          Key("reserved"), Key("seq"), Key("tdelayed:t"),
                          Key("topics"), Key("treserved:t")));
  // Redis Cluster hashes only the part between the first '{' and the next
  // '}': for every key that is the namespace, so all share one slot.
  for (const std::string& k : Keys()) {
    const size_t open = k.find('{');
    const size_t close = k.find('}', open + 1);
    ASSERT_EQ(open, 0u) << k;
    ASSERT_NE(close, std::string::npos) << k;
    EXPECT_EQ(k.substr(open + 1, close - open - 1), options_.ns) << k;
  }
}

// "due" may score a topic too early once its earliest delayed job went;
// NextDue() and PromoteDue() still see the true earliest run_at.
TEST_F(RedisBackendTest, ADueScoreLeftTooEarlyIsCorrectedNotFollowed) {
  ASSERT_OK(backend_->Add({MakeJob("d1", "t", kT0 + absl::Seconds(1)),
                           MakeJob("d5", "t", kT0 + absl::Seconds(5)),
                           MakeJob("u9", "u", kT0 + absl::Seconds(9))},
                          kT0));
  ASSERT_OK(backend_->Cancel("d1", kT0));
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend_->NextDue());
  EXPECT_EQ(next, kT0 + absl::Seconds(5));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> d5,
                       backend_->Reserve("t", 1, kT0 + absl::Seconds(5)));
  ASSERT_EQ(d5.size(), 1u);  // promoted by Reserve itself
  ASSERT_OK_AND_ASSIGN(PromoteResult r,
                       backend_->PromoteDue(kT0 + absl::Seconds(6), 10));
  EXPECT_TRUE(r.transitions.empty());
  EXPECT_FALSE(r.more);
  // Topic t has no delayed job left: u9 is next, before d5's lease ends.
  ASSERT_OK_AND_ASSIGN(next, backend_->NextDue());
  EXPECT_EQ(next, kT0 + absl::Seconds(9));
  ASSERT_OK(
      backend_->Ack("d5", d5[0].token, /*result=*/"", kT0 + absl::Seconds(6)));
  ASSERT_OK_AND_ASSIGN(r, backend_->PromoteDue(kT0 + absl::Seconds(9), 10));
  ASSERT_EQ(r.transitions.size(), 1u);
  EXPECT_EQ(r.transitions[0].id, "u9");
  ASSERT_OK_AND_ASSIGN(next, backend_->NextDue());
  EXPECT_EQ(next, absl::InfiniteFuture());
}

// The ready set orders by member bytes (a binary header of priority, run_at
// and enqueue order before the id): the extremes of each field must still
// sort as numbers, sign included, and ids that sort the other way must not
// matter.
// Fencing must survive what Redis can lose: a stale worker's token is never
// the token of the job's next attempt.
TEST_F(RedisBackendTest, ATokenIsNotIssuedAgainAfterRedisLosesEverything) {
  ASSERT_OK(backend_->Add({MakeJob("a", "t")}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> stale,
                       backend_->Reserve("t", 1, kT0));
  ASSERT_EQ(stale.size(), 1u);
  ASSERT_THAT(RawCommand(options_.port, {"FLUSHALL"}), ElementsAre("OK"));
  ASSERT_OK(backend_->Add({MakeJob("a", "t")}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> now, backend_->Reserve("t", 1, kT0));
  ASSERT_EQ(now.size(), 1u);
  EXPECT_THAT(backend_->Ack("a", stale[0].token, /*result=*/"", kT0),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_OK(backend_->Ack("a", now[0].token, /*result=*/"", kT0));
}

TEST_F(RedisBackendTest, ATokenIsNotIssuedAgainAfterAnOlderSnapshotReturns) {
  ASSERT_OK(backend_->Add({MakeJob("a", "t"), MakeJob("b", "t")}, kT0));
  // The namespace as an RDB snapshot taken now would hold it.
  std::vector<std::pair<std::string, std::string>> snapshot;
  for (const std::string& key : Keys()) {
    snapshot.emplace_back(key, RawCommand(options_.port, {"DUMP", key})[0]);
  }
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> stale,
                       backend_->Reserve("t", 2, kT0));
  ASSERT_EQ(stale.size(), 2u);
  // The server comes back from that snapshot: the reservations are gone.
  for (const std::string& key : Keys()) RawCommand(options_.port, {"DEL", key});
  for (const auto& [key, dump] : snapshot) {
    ASSERT_THAT(RawCommand(options_.port, {"RESTORE", key, "0", dump}),
                ElementsAre("OK"));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> now, backend_->Reserve("t", 2, kT0));
  ASSERT_EQ(now.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(now[i].job.id, stale[i].job.id);
    EXPECT_THAT(
        backend_->Ack(stale[i].job.id, stale[i].token, /*result=*/"", kT0),
        StatusIs(absl::StatusCode::kFailedPrecondition));
    EXPECT_OK(backend_->Ack(now[i].job.id, now[i].token, /*result=*/"", kT0));
  }
}

TEST_F(RedisBackendTest, ReadyOrderHoldsAtTheExtremesOfEveryField) {
  constexpr int kMin = std::numeric_limits<int>::min();
  constexpr int kMax = std::numeric_limits<int>::max();
  auto job = [](const char* id, int priority, absl::Time run_at) {
    NewJob j = MakeJob(id, "t", run_at);
    j.priority = priority;
    return j;
  };
  const absl::Time far_past = absl::InfinitePast();
  const absl::Time long_ago = kT0 - absl::Hours(24 * 365 * 100);
  ASSERT_OK(backend_->Add(
      {job("z-max", kMax, far_past), job("y-one", 1, far_past),
       job("x-zero-now", 0, kT0), job("w-zero-ago", 0, long_ago),
       job("v-zero-past", 0, far_past), job("u-minus-one", -1, kT0),
       job("t-min-now", kMin, kT0), job("s-min-past", kMin, far_past),
       job("r-min-past-later", kMin, far_past)},
      kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve("t", 20, kT0));
  std::vector<std::string> ids;
  for (const Lease& l : leases) ids.push_back(l.job.id);
  EXPECT_THAT(ids, ElementsAre("s-min-past", "r-min-past-later", "t-min-now",
                               "u-minus-one", "v-zero-past", "w-zero-ago",
                               "x-zero-now", "y-one", "z-max"));
  // What went in comes back out, extremes included.
  EXPECT_EQ(leases[0].job.priority, kMin);
  EXPECT_EQ(leases[8].job.priority, kMax);
  EXPECT_EQ(leases[0].job.run_at, absl::FromUnixMicros(-(int64_t{1} << 52)));

  // Enqueue order past 255 and 65535 (bytes 0x00 and 0xff inside the
  // header), with ids that sort the other way. 70,000 jobs go in one
  // script: the test is about their order, so a loaded host gets more than
  // the default 2 s to answer.
  options_.command_timeout = absl::Seconds(20);
  ASSERT_OK_AND_ASSIGN(backend_, RedisBackend::Open(options_));
  std::vector<NewJob> many;
  for (int i = 0; i < 70000; ++i) {
    many.push_back(MakeJob(absl::StrCat("m", 99999 - i), "many"));
  }
  ASSERT_OK(backend_->Add(many, kT0));
  ASSERT_OK_AND_ASSIGN(leases, backend_->Reserve("many", 70000, kT0));
  ASSERT_EQ(leases.size(), many.size());
  for (size_t i = 0; i < many.size(); ++i) {
    ASSERT_EQ(leases[i].job.id, many[i].id) << i;
  }
}

// A job's fixed settings share one hash field, colon-separated, next to the
// payload's own field: a payload full of colons and the settings must both
// come back intact on every path that reads a job.
TEST_F(RedisBackendTest, PayloadWithSeparatorsRoundTrips) {
  NewJob j = MakeJob("colons", "t");
  j.payload = std::string(":1:2:f:3:4:\0:", 13);
  j.priority = -5;
  j.max_attempts = 7;
  j.ttr = absl::Seconds(9);
  j.backoff = Backoff::Fixed(absl::Milliseconds(250));
  ASSERT_OK(backend_->Add({j}, kT0));
  auto check = [&](const Job& got) {
    EXPECT_EQ(got.payload, j.payload);
    EXPECT_EQ(got.priority, -5);
    EXPECT_EQ(got.max_attempts, 7);
    EXPECT_EQ(got.ttr, absl::Seconds(9));
    EXPECT_EQ(got.backoff.kind, Backoff::Kind::kFixed);
    EXPECT_EQ(got.backoff.base, absl::Milliseconds(250));
  };
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("colons"));
  check(got);
  ASSERT_OK_AND_ASSIGN(std::vector<Job> listed,
                       backend_->List("t", JobState::kReady, 10));
  ASSERT_EQ(listed.size(), 1u);
  check(listed[0]);
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve("t", 1, kT0));
  ASSERT_EQ(leases.size(), 1u);
  check(leases[0].job);
  EXPECT_EQ(leases[0].deadline, kT0 + absl::Seconds(9));
}

TEST_F(RedisBackendTest, AckedAndCancelledJobsLeaveNoKeyBehind) {
  ASSERT_OK(backend_->Add(
      {MakeJob("ack-me", "t"), MakeJob("cancel-ready", "t"),
       MakeJob("cancel-delayed", "u", kT0 + absl::Hours(1)),
       MakeJob("cancel-reserved", "v"), MakeJob("cancel-dead", "w")},
      kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> t, backend_->Reserve("t", 1, kT0));
  ASSERT_THAT(t, ::testing::SizeIs(1));
  ASSERT_OK(backend_->Ack(t[0].job.id, t[0].token, /*result=*/"", kT0));
  ASSERT_OK(backend_->Cancel("cancel-ready", kT0));
  ASSERT_OK(backend_->Cancel("cancel-delayed", kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> v, backend_->Reserve("v", 1, kT0));
  ASSERT_OK(backend_->Cancel("cancel-reserved", kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> w, backend_->Reserve("w", 1, kT0));
  ASSERT_OK_AND_ASSIGN(
      FailOutcome out,
      backend_->Fail("cancel-dead", w[0].token, "boom", kT0, kT0));
  ASSERT_EQ(out, FailOutcome::kDead);
  ASSERT_OK(backend_->Cancel("cancel-dead", kT0));
  // Only the counters and the namespace's settings remain, and the news
  // horizon until NextDue() finds nothing pending.
  EXPECT_THAT(Keys(), ElementsAre(Key("horizon"), Key("meta"), Key("seq")));
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend_->NextDue());
  EXPECT_EQ(next, absl::InfiniteFuture());
  EXPECT_THAT(Keys(), ElementsAre(Key("meta"), Key("seq")));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> topics, backend_->Topics());
  EXPECT_TRUE(topics.empty());
}

// A done job lives in Redis, not in the process that acked it: its record
// reads back whole after the store reconnects, and another store object on
// the namespace (another process's view) sees it as done.
TEST_F(RedisBackendTest, ADoneJobSurvivesAReconnectAndShowsToAnotherStore) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisBackend> other,
                       RedisBackend::Open(options_));
  NewJob kept = MakeJob("kept", "t");
  kept.keep_for = absl::Hours(1);
  kept.keep_at_most = 5;
  ASSERT_OK(backend_->Add({kept}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve("t", 1, kT0));
  ASSERT_EQ(leases.size(), 1u);
  const absl::Time acked_at = kT0 + absl::Seconds(2);
  const std::string result("result\r\n\0bytes", 14);
  ASSERT_OK(backend_->Ack("kept", leases[0].token, result, acked_at));

  auto check = [&](const Job& job) {
    EXPECT_EQ(job.id, "kept");
    EXPECT_EQ(job.state, JobState::kDone);
    EXPECT_EQ(job.result, result);
    EXPECT_EQ(job.finished_at, acked_at);
    EXPECT_EQ(job.deadline, absl::InfinitePast());
    EXPECT_EQ(job.keep_for, absl::Hours(1));
    EXPECT_EQ(job.keep_at_most, 5);
    EXPECT_EQ(job.attempts, 1);
  };
  backend_.reset();
  ASSERT_OK_AND_ASSIGN(backend_, RedisBackend::Open(options_));
  ASSERT_OK_AND_ASSIGN(Job again, backend_->Get("kept"));
  check(again);
  ASSERT_OK_AND_ASSIGN(Job seen, other->Get("kept"));
  check(seen);
  ASSERT_OK_AND_ASSIGN(std::vector<Job> listed,
                       other->List("t", JobState::kDone, 10));
  ASSERT_EQ(listed.size(), 1u);
  check(listed[0]);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, other->Stats("t"));
  EXPECT_EQ(stats.done, 1);
  // Its time up, a PromoteDue() of either store lets it go for both.
  ASSERT_OK(other->PromoteDue(acked_at + absl::Hours(1), 100).status());
  EXPECT_THAT(backend_->Get("kept"), StatusIs(absl::StatusCode::kNotFound));
}

// Done jobs leave no key behind, whichever way they go: their time up,
// pushed out by their topic's keep_at_most, or cancelled.
TEST_F(RedisBackendTest, DoneJobsLeaveNoKeyBehind) {
  std::vector<NewJob> jobs;
  for (const char* id : {"a", "b", "c"}) {
    NewJob j = MakeJob(id, "t");
    j.keep_for = absl::Minutes(1);
    j.keep_at_most = 2;
    jobs.push_back(j);
  }
  ASSERT_OK(backend_->Add(jobs, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve("t", 3, kT0));
  ASSERT_EQ(leases.size(), 3u);
  ASSERT_OK(backend_->Ack(leases[0].job.id, leases[0].token, "", kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<absl::Status> acked,
                       backend_->AckBatch({leases[1], leases[2]}, kT0));
  EXPECT_THAT(acked, ElementsAre(absl::OkStatus(), absl::OkStatus()));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats("t"));
  EXPECT_EQ(stats.done, 2);  // the first acked went for the third
  EXPECT_THAT(backend_->Get(leases[0].job.id),
              StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK(backend_->Cancel(leases[1].job.id, kT0));
  ASSERT_OK(backend_->PromoteDue(kT0 + absl::Minutes(1), 100).status());
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend_->NextDue());
  EXPECT_EQ(next, absl::InfiniteFuture());
  EXPECT_THAT(Keys(), ElementsAre(Key("meta"), Key("seq")));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> topics, backend_->Topics());
  EXPECT_TRUE(topics.empty());
}

// A host whose clock runs ahead would fire every host's delayed jobs early
// and end their leases; one that runs behind would shorten its own leases.
// Such a host's calls are refused, whatever the call: even a read-only
// command that promotes first (`delayq stats`) moves nothing.
TEST(RedisClockSkewTest, ACallerAheadOrBehindIsRefusedAndChangesNothing) {
  RedisOptions options = FreshRedisOptions();
  options.max_clock_skew = absl::Milliseconds(250);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend,
                       OpenRedisBackend(options));
  const absl::Time now = absl::Now();
  ASSERT_OK(backend->Add({MakeJob("ready", "t", now),
                          MakeJob("soon", "t", now + absl::Seconds(5))},
                         now));
  const absl::Time ahead = now + absl::Hours(1);
  const absl::Time behind = now - absl::Hours(1);
  auto refused = [](const absl::Status& status, absl::string_view direction) {
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kFailedPrecondition));
    EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr(direction));
  };
  refused(backend->PromoteDue(ahead, 100).status(), "ahead of");
  refused(backend->Reserve("t", 2, ahead).status(), "ahead of");
  refused(backend->Add({MakeJob("late", "t", behind)}, behind), "behind");
  ASSERT_OK_AND_ASSIGN(Job soon, backend->Get("soon"));
  EXPECT_EQ(soon.state, JobState::kDelayed);
  EXPECT_THAT(backend->Get("late"), StatusIs(absl::StatusCode::kNotFound));
  // A lease cannot be renewed from the future either.
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend->Reserve("t", 2, absl::Now()));
  ASSERT_EQ(leases.size(), 1u);
  refused(backend->Touch("ready", leases[0].token, ahead).status(), "ahead of");
  EXPECT_OK(backend->Ack("ready", leases[0].token, /*result=*/"", absl::Now()));
}

// A cap that one process brought along once trimmed every process's dead
// jobs; a caller that still asks for one is told, not ignored.
TEST(RedisDeadCapTest, ACapIsRefused) {
  RedisOptions options = FreshRedisOptions();
  options.dead_cap = 2;
  absl::StatusOr<std::unique_ptr<Backend>> opened = OpenRedisBackend(options);
  EXPECT_THAT(opened.status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(opened.status().message()),
              ::testing::HasSubstr("dead jobs stay"));
}

TEST(RedisDeadCapTest, LeasesExpiringInReserveKeepEveryDeadJobUnderTheCap) {
  RedisOptions options = FreshRedisOptions();
  options.delay_buckets = 2;  // unlike the cap, so a mix-up would show
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend,
                       OpenRedisBackend(options));
  std::vector<NewJob> jobs;
  for (int i = 0; i < 6; ++i)
    jobs.push_back(MakeJob(absl::StrCat("j", i), "t"));
  ASSERT_OK(backend->Add(jobs, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> l, backend->Reserve("t", 6, kT0));
  ASSERT_EQ(l.size(), 6u);
  // Every lease expired with no attempts left: Reserve buries them all.
  ASSERT_OK_AND_ASSIGN(l, backend->Reserve("t", 6, kT0 + absl::Minutes(1)));
  EXPECT_TRUE(l.empty());
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("t"));
  EXPECT_EQ(stats, (TopicStats{0, 0, 0, 6}));
}

TEST(RedisServerTimeTest, ScriptsUseTheServersClock) {
  RedisOptions options = FreshRedisOptions();
  options.time_source = RedisOptions::TimeSource::kServer;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend,
                       OpenRedisBackend(options));
  // The caller's clock is years behind; delays are taken relative to it.
  const absl::Time caller_now = absl::FromUnixSeconds(1'000'000'000);
  const absl::Time before = absl::Now();
  NewJob later = MakeJob("later", "t", caller_now + absl::Hours(1));
  NewJob now = MakeJob("now", "t", caller_now);
  ASSERT_OK(backend->Add({later, now}, caller_now));
  const absl::Time after = absl::Now();
  ASSERT_OK_AND_ASSIGN(Job got, backend->Get("later"));
  EXPECT_EQ(got.state, JobState::kDelayed);
  // Allow for the server's clock to differ from this process's by a second.
  const absl::Duration slack = absl::Seconds(1);
  EXPECT_GE(got.enqueued_at, before - slack);
  EXPECT_LE(got.enqueued_at, after + slack);
  EXPECT_GE(got.run_at, before + absl::Hours(1) - slack);
  EXPECT_LE(got.run_at, after + absl::Hours(1) + slack);
  // "now" is due on the server's clock, whatever the caller passes.
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> l,
                       backend->Reserve("t", 5, caller_now - absl::Hours(5)));
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].job.id, "now");
  EXPECT_GE(l[0].deadline, before + absl::Seconds(30) - slack);
  ASSERT_OK_AND_ASSIGN(absl::Time next, backend->NextDue());
  EXPECT_EQ(next, l[0].deadline);
}

// The ack that finishes a batch releases its completion job on the
// server's clock too: due at once there, it is ready, although the
// caller's clock is years behind.
TEST(RedisServerTimeTest, TheLastAckReleasesTheCompletionJobOnTheServersClock) {
  RedisOptions options = FreshRedisOptions();
  options.time_source = RedisOptions::TimeSource::kServer;
  // Counting would read the server's clock in any case.
  options.counts.enabled = false;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend,
                       OpenRedisBackend(options));
  const absl::Time caller_now = absl::FromUnixSeconds(1'000'000'000);
  ASSERT_OK(
      backend->OpenBatch(MakeJob("batch", "after", caller_now), caller_now));
  NewJob member = MakeJob("member", "work", caller_now);
  member.batch = "batch";
  ASSERT_OK(backend->Add({member}, caller_now));
  ASSERT_OK(backend->CloseBatch("batch", caller_now));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> l,
                       backend->Reserve("work", 1, caller_now));
  ASSERT_EQ(l.size(), 1u);
  ASSERT_OK(backend->Ack("member", l[0].token, "", caller_now));
  ASSERT_OK_AND_ASSIGN(Job completion, backend->Get("batch"));
  EXPECT_EQ(completion.state, JobState::kReady);
}

TEST(RedisOpenTest, RejectsBadOptions) {
  RedisOptions o = FreshRedisOptions();
  o.ns = "a{b";
  EXPECT_THAT(OpenRedisBackend(o),
              StatusIs(absl::StatusCode::kInvalidArgument));
  o = FreshRedisOptions();
  o.delay_buckets = 0;
  EXPECT_THAT(OpenRedisBackend(o),
              StatusIs(absl::StatusCode::kInvalidArgument));
  o = FreshRedisOptions();
  o.port = 70000;
  EXPECT_THAT(OpenRedisBackend(o),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(RedisOpenTest, UnreachableServerIsUnavailable) {
  RedisOptions o = FreshRedisOptions();
  o.port = 1;  // privileged and unused: the connection is refused
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<Backend>> b = OpenRedisBackend(o);
  EXPECT_THAT(b, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(std::string(b.status().message()),
              ::testing::HasSubstr("127.0.0.1:1"));
  EXPECT_LT(absl::Now() - start, o.connect_timeout + absl::Seconds(1));
}

TEST(RedisSocketTest, WorksOverTheServersUnixSocket) {
  RedisOptions o = FreshRedisOptions();
  o.unix_socket = SharedRedisServer().socket_path();
  o.host = "host.invalid";  // not used when a socket is given
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisBackend> b, RedisBackend::Open(o));
  ASSERT_OK(b->Add({MakeJob("a", "t")}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases, b->Reserve("t", 1, kT0));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_OK(b->Ack("a", leases[0].token, /*result=*/"", kT0));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, b->Stats("t"));
  EXPECT_EQ(stats.ready + stats.reserved + stats.delayed + stats.dead, 0);
}

TEST(RedisSocketTest, APathTooLongForASocketAddressIsInvalid) {
  RedisOptions o = FreshRedisOptions();
  o.unix_socket = "/" + std::string(107, 's');
  absl::StatusOr<std::unique_ptr<RedisBackend>> b = RedisBackend::Open(o);
  EXPECT_THAT(b, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(b.status().message()),
              ::testing::HasSubstr("unix_socket"));
}

TEST(RedisSocketTest, AMissingSocketIsUnavailableNamingIt) {
  RedisOptions o = FreshRedisOptions();
  const std::string& live = SharedRedisServer().socket_path();
  o.unix_socket = live.substr(0, live.rfind('/')) + "/no-such.sock";
  absl::StatusOr<std::unique_ptr<RedisBackend>> b = RedisBackend::Open(o);
  EXPECT_THAT(b, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(std::string(b.status().message()),
              ::testing::HasSubstr(o.unix_socket));
}

TEST(RedisOpenTest, WrongPasswordIsRefused) {
  RedisOptions o = FreshRedisOptions();
  o.password = "not-the-password";
  // The server has no password: Redis answers AUTH with an error.
  EXPECT_THAT(OpenRedisBackend(o),
              StatusIs(absl::StatusCode::kPermissionDenied));
}

// delay_buckets no longer splits anything (layout 4): processes that pass
// different counts share the namespace's delayed jobs.
TEST(RedisOpenTest, ProcessesWithOtherBucketCountsSeeEveryDelayedJob) {
  RedisOptions o = FreshRedisOptions();
  o.delay_buckets = 3;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisBackend> first,
                       RedisBackend::Open(o));
  ASSERT_OK(first->Add({MakeJob("x", "t", kT0 + absl::Seconds(5)),
                        MakeJob("y", "t", kT0 + absl::Seconds(5)),
                        MakeJob("z", "t", kT0 + absl::Seconds(5))},
                       kT0));
  o.delay_buckets = 1;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisBackend> second,
                       RedisBackend::Open(o));
  ASSERT_OK_AND_ASSIGN(PromoteResult r,
                       second->PromoteDue(kT0 + absl::Seconds(5), 10));
  EXPECT_EQ(r.transitions.size(), 3u);
}

// The data layout this version writes, and the next one (backends/redis
// README.md, "Data layout").
constexpr char kLayoutNow[] = "9";
constexpr char kLayoutNext[] = "10";

TEST(RedisOpenTest, ANewNamespaceRecordsItsLayout) {
  RedisOptions o = FreshRedisOptions();
  ASSERT_OK(RedisBackend::Open(o).status());
  EXPECT_THAT(RawCommand(o.port, {"HGETALL", NsKey(o, "meta")}),
              ElementsAre("layout", kLayoutNow));
}

// A namespace an earlier delayq wrote: meta records only the bucket count.
TEST(RedisOpenTest, RefusesJobsInTheEarlierLayoutWithoutTouchingThem) {
  RedisOptions o = FreshRedisOptions();
  RawCommand(o.port, {"HSET", NsKey(o, "meta"), "buckets", "4"});
  RawCommand(o.port, {"SADD", NsKey(o, "topics"), "mail"});
  RawCommand(o.port, {"HSET", NsKey(o, "counts:mail"), "ready", "1"});
  absl::StatusOr<std::unique_ptr<RedisBackend>> b = RedisBackend::Open(o);
  EXPECT_THAT(b, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(b.status().message()),
              ::testing::HasSubstr("earlier delayq"));
  EXPECT_THAT(RawCommand(o.port, {"HGETALL", NsKey(o, "meta")}),
              ElementsAre("buckets", "4"));
}

TEST(RedisOpenTest, TakesOverAnEmptyNamespaceOfTheEarlierLayout) {
  RedisOptions o = FreshRedisOptions();
  RawCommand(o.port, {"HSET", NsKey(o, "meta"), "buckets", "4"});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisBackend> b, RedisBackend::Open(o));
  EXPECT_THAT(RawCommand(o.port, {"HGETALL", NsKey(o, "meta")}),
              ElementsAre("layout", kLayoutNow));
  ASSERT_OK(b->Add({MakeJob("a", "t")}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases, b->Reserve("t", 1, kT0));
  EXPECT_EQ(leases.size(), 1u);
}

// Layout 2 packed run_at with a bias that lost its last bit: its ready
// members cannot be read by this version.
TEST(RedisOpenTest, RefusesJobsInAnOlderRecordedLayout) {
  RedisOptions o = FreshRedisOptions();
  RawCommand(o.port, {"HSET", NsKey(o, "meta"), "buckets", "4", "layout", "2"});
  RawCommand(o.port, {"SADD", NsKey(o, "topics"), "mail"});
  absl::StatusOr<std::unique_ptr<RedisBackend>> b = RedisBackend::Open(o);
  EXPECT_THAT(b, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(RawCommand(o.port, {"HGET", NsKey(o, "meta"), "layout"}),
              ElementsAre("2"));

  RawCommand(o.port, {"DEL", NsKey(o, "topics")});
  ASSERT_OK(RedisBackend::Open(o).status());
  EXPECT_THAT(RawCommand(o.port, {"HGET", NsKey(o, "meta"), "layout"}),
              ElementsAre(kLayoutNow));
}

// Layout 3 kept a hash per job and delay buckets: a namespace holding jobs
// in it is refused, with a message that says what to do, and left as it is;
// once drained (by the version that wrote it) it is taken over.
TEST(RedisOpenTest, RefusesJobsInLayout3WithoutTouchingThem) {
  RedisOptions o = FreshRedisOptions();
  const std::vector<std::vector<std::string>> layout3 = {
      {"HSET", NsKey(o, "meta"), "buckets", "4", "layout", "3"},
      {"HSET", NsKey(o, "job:a"), "topic", "mail", "state", "delayed", "spec",
       "0:3:60000000:e:1000000:3600000000", "payload", "x", "enqueued_at", "1",
       "run_at", "2", "seq", "1", "bucket", "1"},
      {"ZADD", NsKey(o, "delayed:1"), "2", "a"},
      {"ZADD", NsKey(o, "tdelayed:mail"), "2", "a"},
      {"SADD", NsKey(o, "topics"), "mail"},
      {"SET", NsKey(o, "seq"), "1"}};
  std::vector<std::pair<std::string, std::string>> before;
  for (const auto& command : layout3) RawCommand(o.port, command);
  for (const auto& command : layout3) {
    before.emplace_back(command[1],
                        RawCommand(o.port, {"DUMP", command[1]})[0]);
  }
  absl::StatusOr<std::unique_ptr<RedisBackend>> b = RedisBackend::Open(o);
  EXPECT_THAT(b, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(b.status().message()),
              ::testing::HasSubstr("earlier delayq"));
  for (const auto& [key, dump] : before) {
    EXPECT_EQ(RawCommand(o.port, {"DUMP", key})[0], dump) << key;
  }

  // Drained by the version that wrote it: only meta and seq stay.
  for (const auto& command : layout3) {
    if (command[1] != NsKey(o, "meta") && command[1] != NsKey(o, "seq")) {
      RawCommand(o.port, {"DEL", command[1]});
    }
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisBackend> taken,
                       RedisBackend::Open(o));
  EXPECT_THAT(RawCommand(o.port, {"HGETALL", NsKey(o, "meta")}),
              ElementsAre("layout", kLayoutNow));
  ASSERT_OK(taken->Add({MakeJob("a", "mail")}, kT0));
  ASSERT_OK_AND_ASSIGN(Job a, taken->Get("a"));
  EXPECT_EQ(a.state, JobState::kReady);
}

// Layouts 5 to 9 only add to layout 4 (record values and keys for expiry,
// dedup windows, done jobs, lease holders and dependencies), so a namespace
// of layout 4 with jobs is taken over as it is and its jobs read back.
TEST(RedisOpenTest, TakesOverLayout4WithItsJobs) {
  RedisOptions o = FreshRedisOptions();
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisBackend> b,
                         RedisBackend::Open(o));
    ASSERT_OK(b->Add({MakeJob("a", "mail")}, kT0));
  }
  RawCommand(o.port, {"HSET", NsKey(o, "meta"), "layout", "4"});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisBackend> b, RedisBackend::Open(o));
  EXPECT_THAT(RawCommand(o.port, {"HGET", NsKey(o, "meta"), "layout"}),
              ElementsAre(kLayoutNow));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases, b->Reserve("mail", 1, kT0));
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].job.id, "a");
}

// Layout 8 kept a waiting job's count of pending dependencies in its
// record (value 28); layout 9 keeps it in the pending hash. A namespace of
// layout 8 is taken over with its waiting jobs, which count off in their
// records and run once, after their last dependency.
TEST(RedisOpenTest, TakesOverLayout8WithItsWaitingJobs) {
  RedisOptions o = FreshRedisOptions();
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisBackend> b,
                         RedisBackend::Open(o));
    NewJob w = MakeJob("w", "parent");
    w.after = {"a", "b"};
    ASSERT_OK(b->Add({MakeJob("a", "t"), MakeJob("b", "t"), w}, kT0));
  }
  // Written as layout 8 wrote it: the count in the record, none apart.
  RawCommand(
      o.port,
      {"EVAL",
       "local r = redis.call('HGET', KEYS[1], 'w') "
       "local j = {cmsgpack.unpack(r)} "
       "j[28] = tonumber(redis.call('HGET', KEYS[2], 'w')) "
       "redis.call('HDEL', KEYS[2], 'w') "
       "redis.call('HSET', KEYS[1], 'w', cmsgpack.pack(unpack(j, 1, 28))) "
       "redis.call('HSET', KEYS[3], 'layout', '8')",
       "3", NsKey(o, "jobs"), NsKey(o, "pending"), NsKey(o, "meta")});
  ASSERT_THAT(RawCommand(o.port, {"HLEN", NsKey(o, "pending")}),
              ElementsAre("0"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisBackend> b, RedisBackend::Open(o));
  EXPECT_THAT(RawCommand(o.port, {"HGET", NsKey(o, "meta"), "layout"}),
              ElementsAre(kLayoutNow));
  for (const char* id : {"a", "b"}) {
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> parent,
                         b->Reserve("parent", 1, kT0));
    EXPECT_THAT(parent, ::testing::IsEmpty()) << "before " << id;
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases, b->Reserve("t", 1, kT0));
    ASSERT_EQ(leases.size(), 1u);
    ASSERT_OK(b->Ack(leases[0].job.id, leases[0].token, "", kT0));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> parent,
                       b->Reserve("parent", 10, kT0));
  ASSERT_EQ(parent.size(), 1u);
  EXPECT_EQ(parent[0].job.id, "w");
  EXPECT_THAT(RawCommand(o.port, {"HLEN", NsKey(o, "pending")}),
              ElementsAre("0"));
}

TEST(RedisOpenTest, RefusesANewerLayout) {
  RedisOptions o = FreshRedisOptions();
  RawCommand(o.port, {"HSET", NsKey(o, "meta"), "layout", kLayoutNext});
  absl::StatusOr<std::unique_ptr<RedisBackend>> b = RedisBackend::Open(o);
  EXPECT_THAT(b, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(b.status().message()),
              ::testing::HasSubstr("newer delayq"));
}

// With a promotion limit, Reserve() moves at most that many of its topic's
// due jobs, earliest due first whichever set they are in; the rest wait for
// the next call.
TEST(RedisReservePromoteLimitTest, MovesTheEarliestDueFirstUpToTheLimit) {
  RedisOptions o = FreshRedisOptions();
  o.reserve_promote_limit = 2;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisBackend> b, RedisBackend::Open(o));
  NewJob leased = MakeJob("r", "t");  // max_attempts 1
  leased.ttr = absl::Seconds(1);
  ASSERT_OK(b->Add({leased}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> first, b->Reserve("t", 1, kT0));
  ASSERT_EQ(first.size(), 1u);  // its lease ends at kT0 + 1 s
  ASSERT_OK(b->Add({MakeJob("d5", "t", kT0 + absl::Seconds(5)),
                    MakeJob("d4", "t", kT0 + absl::Seconds(4)),
                    MakeJob("d3", "t", kT0 + absl::Seconds(3)),
                    MakeJob("d2", "t", kT0 + absl::Seconds(2))},
                   kT0));

  const absl::Time later = kT0 + absl::Seconds(10);
  std::vector<Transition> moved;
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       b->Reserve("t", 10, later, &moved));
  ASSERT_EQ(moved.size(), 2u);
  EXPECT_EQ(moved[0].id, "r");
  EXPECT_EQ(moved[0].kind, Transition::Kind::kDead);
  EXPECT_EQ(moved[1].id, "d2");
  EXPECT_EQ(moved[1].kind, Transition::Kind::kPromoted);
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].job.id, "d2");
  ASSERT_OK_AND_ASSIGN(TopicStats stats, b->Stats("t"));
  EXPECT_EQ(stats.delayed, 3);
  EXPECT_EQ(stats.reserved, 1);
  EXPECT_EQ(stats.dead, 1);

  moved.clear();
  ASSERT_OK_AND_ASSIGN(leases, b->Reserve("t", 10, later, &moved));
  ASSERT_EQ(leases.size(), 2u);
  EXPECT_EQ(leases[0].job.id, "d3");
  EXPECT_EQ(leases[1].job.id, "d4");
  ASSERT_OK_AND_ASSIGN(leases, b->Reserve("t", 10, later));
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].job.id, "d5");
}

TEST(RedisSelectTest, DbTheServerDoesNotHaveIsInvalid) {
  RedisOptions o = FreshRedisOptions();
  o.db = 1000;  // the server has 16
  EXPECT_THAT(OpenRedisBackend(o),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(RedisSelectTest, DbSeparatesStores) {
  RedisOptions o = FreshRedisOptions();
  o.db = 2;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> in_db2, OpenRedisBackend(o));
  ASSERT_OK(in_db2->Add({MakeJob("x", "t")}, kT0));
  o.db = 0;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> in_db0, OpenRedisBackend(o));
  EXPECT_THAT(in_db0->Get("x"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_OK(in_db2->Get("x").status());
}

}  // namespace
}  // namespace delayq
