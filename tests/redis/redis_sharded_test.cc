// Copyright delayq authors.
//
// A sharded namespace (RedisOptions::shards) on one redis-server: the
// conformance and news suites with shards=3, then what sharding adds: jobs
// of one topic spread over the shards, a batch across shards that a later
// shard refuses leaves nothing behind, a batch ack across shards answers
// each lease in its place, Reserve() leaves shards that have
// no ready work alone, a namespace keeps its shard count, and a flow
// (Scheduler::EnqueueFlow()) lies on one shard or is refused. The same
// suites run on a Redis Cluster in redis_cluster_test.cc.

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "backends/redis/internal/keys.h"
#include "backends/redis/sharded_backend.h"
#include "delayq/redis_backend.h"
#include "delayq/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/conformance/batch_conformance.h"
#include "tests/conformance/dependency_conformance.h"
#include "tests/conformance/news_conformance.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace {

using ::delayq::testing::BackendConformanceTest;
using ::delayq::testing::BatchConformanceTest;
using ::delayq::testing::DependencyConformanceTest;
using ::delayq::testing::DependencyResultsTest;
using ::delayq::testing::NewsConformanceTest;
using ::delayq::testing::RawCommand;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int kShards = 3;
const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

RedisOptions ShardedOptions() {
  RedisOptions o = testing::FreshRedisOptions();
  o.shards = kShards;
  return o;
}

INSTANTIATE_TEST_SUITE_P(RedisSharded, BackendConformanceTest,
                         ::testing::Values(testing::BackendFactory{
                             "redis_sharded",
                             []() -> absl::StatusOr<std::unique_ptr<Backend>> {
                               return OpenRedisBackend(ShardedOptions());
                             },
                             [](const TopicLimit& limit) {
                               return ShardShareOfLimit(limit, kShards);
                             },
                             /*model_steps=*/1000}),
                         testing::BackendFactoryName);
const testing::BackendFactory kSharded{
    "redis_sharded", []() -> absl::StatusOr<std::unique_ptr<Backend>> {
      return OpenRedisBackend(ShardedOptions());
    }};
// The suites' jobs share a tag ({f}, {b}), so each test's jobs lie on one
// shard.
INSTANTIATE_TEST_SUITE_P(RedisSharded, DependencyConformanceTest,
                         ::testing::Values(kSharded),
                         testing::BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(RedisSharded, DependencyResultsTest,
                         ::testing::Values(kSharded),
                         testing::BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(RedisSharded, BatchConformanceTest,
                         ::testing::Values(kSharded),
                         testing::BackendFactoryName);

testing::NewsPair OpenShardedNewsPair() {
  const RedisOptions options = ShardedOptions();
  return testing::OpenNewsPair([&] { return OpenRedisBackend(options); },
                               options.ns);
}

INSTANTIATE_TEST_SUITE_P(
    RedisSharded, NewsConformanceTest,
    ::testing::Values(testing::NewsStore{"redis_sharded", OpenShardedNewsPair}),
    [](const ::testing::TestParamInfo<testing::NewsStore>& info) {
      return info.param.name;
    });

std::unique_ptr<ShardedRedisBackend> OpenSharded(const RedisOptions& o) {
  absl::StatusOr<std::unique_ptr<ShardedRedisBackend>> b =
      ShardedRedisBackend::Open(o);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *std::move(b) : nullptr;
}

NewJob MailJob(const std::string& id, absl::Time run_at = kT0) {
  return testing::PlainJob(id, "mail", run_at);
}

// An id that falls on `shard`: "<stem>-<n>" for the first n that does.
std::string IdOn(int shard, const std::string& stem) {
  for (int n = 0;; ++n) {
    std::string id = absl::StrCat(stem, "-", n);
    if (redis_internal::ShardOfJob(id, kShards) == shard) return id;
  }
}

TEST(ShardOfJobTest, HashesTheTagOrTheWholeId) {
  EXPECT_EQ(redis_internal::ShardOfJob("anything", 1), 0);
  // Ids that share a tag share a shard; the hash is Redis Cluster's.
  for (int n = 0; n < 20; ++n) {
    EXPECT_EQ(redis_internal::ShardOfJob(absl::StrCat("{order-7}:", n), 5),
              redis_internal::ShardOfJob("order-7", 5));
  }
  EXPECT_EQ(redis_internal::ShardOfJob("123456789", 1000), 0x31C3 % 1000);
  EXPECT_EQ(redis_internal::ShardNamespace("orders", 0), "orders");
  EXPECT_EQ(redis_internal::ShardNamespace("orders", 2), "orders#2");
}

TEST(RedisShardedTest, JobsOfOneTopicSpreadOverTheShards) {
  const RedisOptions options = ShardedOptions();
  auto store = OpenSharded(options);
  ASSERT_NE(store, nullptr);
  std::vector<NewJob> jobs;
  for (int i = 0; i < 60; ++i) jobs.push_back(MailJob(absl::StrCat("j", i)));
  ASSERT_OK(store->Add(jobs, kT0));
  const int port = testing::SharedRedisServer().port();
  int total = 0;
  for (int k = 0; k < kShards; ++k) {
    const redis_internal::KeyLayout keys(
        redis_internal::ShardNamespace(options.ns, k));
    const std::vector<std::string> n = RawCommand(port, {"HLEN", keys.Jobs()});
    ASSERT_EQ(n.size(), 1u);
    const int here = std::stoi(n[0]);
    EXPECT_GE(here, 10) << "shard " << k << " holds " << here << " of 60";
    total += here;
    // Each job is on the shard its id names.
    for (const NewJob& j : jobs) {
      if (redis_internal::ShardOfJob(j.id, kShards) != k) continue;
      EXPECT_EQ(RawCommand(port, {"HEXISTS", keys.Jobs(), j.id}),
                std::vector<std::string>{"1"})
          << j.id;
    }
  }
  EXPECT_EQ(total, 60);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, store->Stats("mail"));
  EXPECT_EQ(stats.ready, 60);
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       store->Reserve("mail", 100, kT0));
  EXPECT_EQ(leases.size(), 60u);
}

TEST(RedisShardedTest, ABatchThatALaterShardRefusesLeavesNothingBehind) {
  const RedisOptions options = ShardedOptions();
  auto store = OpenSharded(options);
  ASSERT_NE(store, nullptr);
  const std::vector<NewJob> batch = {
      MailJob(IdOn(0, "a")), MailJob(IdOn(1, "b")), MailJob(IdOn(2, "c"))};
  // Between the check of every id and the write of shard 2, another
  // producer takes the id that shard 2 was to store.
  NewJob rival = MailJob(batch[2].id);
  rival.payload = "rival";
  std::vector<int> writes;
  store->SetBeforeShardWriteForTesting([&](int shard) {
    writes.push_back(shard);
    if (shard == 2) {
      ASSERT_OK(store->shard(2).Add({rival}, kT0));
    }
  });
  const absl::Status added = store->Add(batch, kT0);
  EXPECT_TRUE(absl::IsAlreadyExists(added)) << added;
  EXPECT_THAT(added.message(), ::testing::HasSubstr(batch[2].id));
  EXPECT_THAT(writes, ElementsAre(0, 1, 2));
  // Shards 0 and 1 stored their part, and it was deleted again.
  EXPECT_TRUE(absl::IsNotFound(store->Get(batch[0].id).status()));
  EXPECT_TRUE(absl::IsNotFound(store->Get(batch[1].id).status()));
  ASSERT_OK_AND_ASSIGN(Job kept, store->Get(batch[2].id));
  EXPECT_EQ(kept.payload, "rival");
  ASSERT_OK_AND_ASSIGN(TopicStats stats, store->Stats("mail"));
  EXPECT_EQ(stats.ready, 1);
  // The withdrawn ids are free: not held as a cancel would hold them.
  store->SetBeforeShardWriteForTesting(nullptr);
  NewJob again = MailJob(batch[0].id);
  again.unique_for = absl::Hours(1);
  ASSERT_OK(store->Add({again, MailJob(batch[1].id)}, kT0));
}

// A shard's script settles the jobs that wait for a job, and touches its own
// slot only: a job may wait only for jobs of its own shard.
TEST(RedisShardedTest, AJobMayNotWaitForAJobOfAnotherShard) {
  auto store = OpenSharded(ShardedOptions());
  ASSERT_NE(store, nullptr);
  const std::string there = IdOn(1, "dep");
  ASSERT_OK(store->Add({MailJob(there)}, kT0));
  NewJob waiter = MailJob(IdOn(0, "waiter"));
  waiter.after = {there};
  const absl::Status added =
      store->Add({MailJob(IdOn(0, "other")), waiter}, kT0);
  EXPECT_TRUE(absl::IsInvalidArgument(added)) << added;
  EXPECT_THAT(added.message(), ::testing::HasSubstr(there));
  EXPECT_THAT(added.message(), ::testing::HasSubstr("hash tag"));
  EXPECT_TRUE(absl::IsNotFound(store->Get(waiter.id).status()));
  EXPECT_TRUE(absl::IsNotFound(store->Get(IdOn(0, "other")).status()));
  // The same dependency on the waiter's shard, by a shared tag, is held.
  const std::string tagged = absl::StrCat("{", there, "}:waiter");
  ASSERT_EQ(redis_internal::ShardOfJob(tagged, kShards), 1);
  waiter.id = tagged;
  ASSERT_OK(store->Add({waiter}, kT0));
  ASSERT_OK_AND_ASSIGN(Job held, store->Get(tagged));
  EXPECT_EQ(held.state, JobState::kWaiting);
}

// A batch is counted in its completion job's record, which a shard's
// script reaches on its own slot only: a job may join only a batch of its
// own shard.
TEST(RedisShardedTest, AJobMayNotJoinABatchOfAnotherShard) {
  auto store = OpenSharded(ShardedOptions());
  ASSERT_NE(store, nullptr);
  const std::string batch = IdOn(1, "batch");
  ASSERT_OK(store->OpenBatch(MailJob(batch), kT0));
  NewJob member = MailJob(IdOn(0, "member"));
  member.batch = batch;
  const absl::Status added =
      store->Add({MailJob(IdOn(0, "other")), member}, kT0);
  EXPECT_TRUE(absl::IsInvalidArgument(added)) << added;
  EXPECT_THAT(added.message(), ::testing::HasSubstr(batch));
  EXPECT_THAT(added.message(), ::testing::HasSubstr("hash tag"));
  EXPECT_TRUE(absl::IsNotFound(store->Get(member.id).status()));
  EXPECT_TRUE(absl::IsNotFound(store->Get(IdOn(0, "other")).status()));
  ASSERT_OK_AND_ASSIGN(Batch untouched, store->GetBatch(batch));
  EXPECT_EQ(untouched.total, 0);
  // With the batch's tag it lies on the batch's shard and joins.
  member.id = absl::StrCat("{", batch, "}:member");
  ASSERT_EQ(redis_internal::ShardOfJob(member.id, kShards), 1);
  ASSERT_OK(store->Add({member}, kT0));
  ASSERT_OK(store->CloseBatch(batch, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       store->Reserve("mail", 1, kT0));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_EQ(leases[0].job.id, member.id);
  ASSERT_OK(store->Ack(member.id, leases[0].token, "", kT0));
  ASSERT_OK_AND_ASSIGN(Batch done, store->GetBatch(batch));
  EXPECT_EQ(done.done, 1);
  EXPECT_TRUE(done.complete());
  ASSERT_OK_AND_ASSIGN(Job completion, store->Get(batch));
  EXPECT_EQ(completion.state, JobState::kReady);
}

// An add across shards that a later shard refuses withdraws what the
// earlier shards stored: a job of a batch among them leaves the batch
// uncounted, as if it had never joined.
TEST(RedisShardedTest, AWithdrawnJobLeavesItsBatchUncounted) {
  auto store = OpenSharded(ShardedOptions());
  ASSERT_NE(store, nullptr);
  const std::string batch = IdOn(0, "batch");
  ASSERT_OK(store->OpenBatch(MailJob(batch), kT0));
  NewJob member = MailJob(absl::StrCat("{", batch, "}:member"));
  member.batch = batch;
  const std::string taken = IdOn(2, "taken");
  store->SetBeforeShardWriteForTesting([&](int shard) {
    if (shard == 2) {
      ASSERT_OK(store->shard(2).Add({MailJob(taken)}, kT0));
    }
  });
  EXPECT_TRUE(absl::IsAlreadyExists(
      store->Add({member, MailJob(IdOn(1, "b")), MailJob(taken)}, kT0)));
  EXPECT_TRUE(absl::IsNotFound(store->Get(member.id).status()));
  ASSERT_OK_AND_ASSIGN(Batch b, store->GetBatch(batch));
  EXPECT_EQ(b.total, 0);
  EXPECT_EQ(b.cancelled, 0);
  // Closed with nothing pending, it releases its completion job.
  ASSERT_OK(store->CloseBatch(batch, kT0));
  ASSERT_OK_AND_ASSIGN(Job completion, store->Get(batch));
  EXPECT_EQ(completion.state, JobState::kReady);
}

TEST(RedisShardedTest, ABatchAckAcrossShardsAnswersInTheLeasesOrder) {
  auto store = OpenSharded(ShardedOptions());
  ASSERT_NE(store, nullptr);
  const std::string a = IdOn(0, "a"), b = IdOn(1, "b"), c = IdOn(2, "c");
  ASSERT_OK(store->Add({MailJob(a), MailJob(b), MailJob(c)}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       store->Reserve("mail", 3, kT0));
  ASSERT_EQ(leases.size(), 3u);
  absl::flat_hash_map<std::string, Lease> by_id;
  for (const Lease& l : leases) by_id[l.job.id] = l;
  Lease stale = by_id[a];
  stale.token += 1000;
  // Shards 2, 0, 1, 0: each answer lands in its lease's place.
  ASSERT_OK_AND_ASSIGN(
      std::vector<absl::Status> acked,
      store->AckBatch({by_id[c], stale, by_id[b], by_id[a]}, kT0));
  ASSERT_EQ(acked.size(), 4u);
  EXPECT_OK(acked[0]);
  EXPECT_TRUE(absl::IsFailedPrecondition(acked[1])) << acked[1];
  EXPECT_OK(acked[2]);
  EXPECT_OK(acked[3]);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, store->Stats("mail"));
  EXPECT_EQ(stats, TopicStats{});
}

TEST(RedisShardedTest, ABatchWithATakenIdStoresNothing) {
  auto store = OpenSharded(ShardedOptions());
  ASSERT_NE(store, nullptr);
  const std::string taken = IdOn(2, "t");
  ASSERT_OK(store->Add({MailJob(taken)}, kT0));
  int writes = 0;
  store->SetBeforeShardWriteForTesting([&](int) { ++writes; });
  const absl::Status s = store->Add(
      {MailJob(IdOn(0, "x")), MailJob(IdOn(1, "y")), MailJob(taken)}, kT0);
  EXPECT_TRUE(absl::IsAlreadyExists(s)) << s;
  EXPECT_EQ(writes, 0) << "the ids are checked before anything is written";
  ASSERT_OK_AND_ASSIGN(TopicStats stats, store->Stats("mail"));
  EXPECT_EQ(stats.ready, 1);
  // An id twice in one batch, on different positions.
  const std::string dup = IdOn(1, "d");
  EXPECT_TRUE(absl::IsAlreadyExists(
      store->Add({MailJob(dup), MailJob(IdOn(0, "e")), MailJob(dup)}, kT0)));
}

TEST(RedisShardedTest, OnlyTheProcessThatFiresAnOccurrenceStoresItsJobs) {
  const RedisOptions options = ShardedOptions();
  auto winner = OpenSharded(options);
  auto loser = OpenSharded(options);
  ASSERT_NE(winner, nullptr);
  ASSERT_NE(loser, nullptr);
  ScheduleRecord beat;
  beat.name = "beat";
  beat.spec = "@every 1s";
  beat.topic = "mail";
  ASSERT_OK(winner->PutSchedule(beat, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleRecord> read,
                       loser->ListSchedules());
  ASSERT_EQ(read.size(), 1u);
  // The occurrence's jobs fall on shards 1 and 2, away from the schedule.
  const std::vector<NewJob> occurrence = {MailJob(IdOn(1, "beat@1")),
                                          MailJob(IdOn(2, "beat@1"))};
  ASSERT_OK(
      winner->FireSchedule("beat", read[0].revision, kT0, occurrence, kT0));
  // The winner's jobs run and are acked, which frees their ids.
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       winner->Reserve("mail", 10, kT0));
  ASSERT_EQ(leases.size(), 2u);
  for (const Lease& l : leases)
    ASSERT_OK(winner->Ack(l.job.id, l.token, /*result=*/"", kT0));
  // The slower process fires the same occurrence from the revision it
  // read: refused, and none of its jobs was ever stored for a worker to
  // run a second time.
  int writes = 0;
  loser->SetBeforeShardWriteForTesting([&](int) { ++writes; });
  EXPECT_TRUE(absl::IsAlreadyExists(
      loser->FireSchedule("beat", read[0].revision, kT0, occurrence, kT0)));
  EXPECT_EQ(writes, 0);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, loser->Stats("mail"));
  EXPECT_EQ(stats, TopicStats{});
}

// A flow is stored all or nothing (Scheduler::EnqueueFlow()), which a
// sharded namespace does for the jobs of one shard only.
class ShardedFlowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::unique_ptr<ShardedRedisBackend> store = OpenSharded(options_);
    ASSERT_NE(store, nullptr);
    store_ = store.get();
    store_->SetBeforeShardWriteForTesting([this](int) { ++shard_writes_; });
    ASSERT_OK_AND_ASSIGN(scheduler_, Scheduler::Create(std::move(store)));
    reader_ = OpenSharded(options_);
    ASSERT_NE(reader_, nullptr);
  }

  static Scheduler::FlowJob Step(std::string id,
                                 std::vector<std::string> after = {}) {
    Scheduler::FlowJob job;
    job.topic = "mail";
    job.payload = "p";
    job.options.id = std::move(id);
    job.options.after = std::move(after);
    return job;
  }

  // The shard every job of `ids` lies on, by its id and where a second
  // store finds it; -1 when they are not all on one shard.
  int ShardOfAll(const std::vector<std::string>& ids) {
    const int shard = redis_internal::ShardOfJob(ids.front(), kShards);
    const redis_internal::KeyLayout keys(
        redis_internal::ShardNamespace(options_.ns, shard));
    for (const std::string& id : ids) {
      if (redis_internal::ShardOfJob(id, kShards) != shard) return -1;
      if (RawCommand(testing::SharedRedisServer().port(),
                     {"HEXISTS", keys.Jobs(), id}) !=
          std::vector<std::string>{"1"}) {
        return -1;
      }
    }
    return shard;
  }

  const RedisOptions options_ = ShardedOptions();
  ShardedRedisBackend* store_ = nullptr;  // the scheduler's
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<ShardedRedisBackend> reader_;
  int shard_writes_ = 0;  // writes of a part of an Add() across shards
};

TEST_F(ShardedFlowTest, AFlowAcrossShardsIsRefusedAndStoresNothing) {
  const std::string a = IdOn(0, "a"), b = IdOn(1, "b");
  const absl::Status refused =
      scheduler_->EnqueueFlow({Step(a), Step(b)}).status();
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
  EXPECT_THAT(refused.message(),
              ::testing::HasSubstr("a flow is stored all or nothing"));
  EXPECT_THAT(refused.message(), ::testing::HasSubstr("one hash tag"));
  EXPECT_EQ(shard_writes_, 0) << "refused before anything was written";
  EXPECT_TRUE(absl::IsNotFound(reader_->Get(a).status()));
  EXPECT_TRUE(absl::IsNotFound(reader_->Get(b).status()));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, reader_->Stats("mail"));
  EXPECT_EQ(stats, TopicStats{});
  // A batch is no flow: its made ids may fall on several shards, and it
  // goes shard by shard, as before.
  ASSERT_OK(scheduler_->EnqueueBatch("mail", {"x", "y", "z"}).status());
}

TEST_F(ShardedFlowTest, AFlowOfOneTagIsStored) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> ids,
                       scheduler_->EnqueueFlow(
                           {Step("{order-17}:publish", {"{order-17}:render"}),
                            Step("{order-17}:render")}));
  EXPECT_EQ(ShardOfAll(ids), redis_internal::ShardOfJob("order-17", kShards));
  ASSERT_OK_AND_ASSIGN(Job publish, reader_->Get("{order-17}:publish"));
  EXPECT_EQ(publish.state, JobState::kWaiting);
}

TEST_F(ShardedFlowTest, AFlowOfMadeIdsLiesOnOneShard) {
  // Made ids spread over the shards for plain enqueues; a flow's share one.
  std::set<int> shards;
  for (int flow = 0; flow < 12; ++flow) {
    ASSERT_OK_AND_ASSIGN(
        std::vector<std::string> ids,
        scheduler_->EnqueueFlow({Step(""), Step(""), Step(""), Step("")}));
    const int shard = ShardOfAll(ids);
    ASSERT_NE(shard, -1) << ids[0] << " " << ids[1] << " " << ids[2] << " "
                         << ids[3];
    shards.insert(shard);
  }
  EXPECT_GT(shards.size(), 1u) << "each flow gets a tag of its own";
  ASSERT_OK_AND_ASSIGN(TopicStats stats, reader_->Stats("mail"));
  EXPECT_EQ(stats.ready, 48);
}

TEST_F(ShardedFlowTest, MadeIdsJoinTheShardOfTheFlowsTag) {
  const std::string report = absl::StrCat("{", IdOn(2, "order"), "}:report");
  ASSERT_EQ(redis_internal::ShardOfJob(report, kShards), 2);
  ASSERT_OK_AND_ASSIGN(
      std::vector<std::string> ids,
      scheduler_->EnqueueFlow(
          {Step(""), Step(""), Step(report), Step("", {report}), Step("")}));
  EXPECT_EQ(ShardOfAll(ids), 2);
  EXPECT_EQ(ids[2], report);
  ASSERT_OK_AND_ASSIGN(Job waiting, reader_->Get(ids[3]));
  EXPECT_EQ(waiting.state, JobState::kWaiting);
}

TEST(ShardShareOfLimitTest, DividesTheRateExactlyAndRoundsTheRestUp) {
  TopicLimit limit;
  limit.rate = 2;
  limit.period = absl::Seconds(1);
  limit.burst = 3;
  limit.concurrency = 5;
  const TopicLimit share = ShardShareOfLimit(limit, 4);
  EXPECT_EQ(share.rate, 2);
  EXPECT_EQ(share.period, absl::Seconds(4));  // half a reservation a second
  EXPECT_EQ(share.burst, 1);
  EXPECT_EQ(share.concurrency, 2);
  TopicLimit none;  // no rate, no cap: none on the shards either
  EXPECT_EQ(ShardShareOfLimit(none, 4), none);
}

TEST(RedisShardedTest, ALimitIsEnforcedPerShard) {
  auto store = OpenSharded(ShardedOptions());
  ASSERT_NE(store, nullptr);
  std::vector<NewJob> jobs;
  for (int k = 0; k < kShards; ++k) {
    for (int i = 0; i < 3; ++i) {
      jobs.push_back(MailJob(IdOn(k, absl::StrCat("l", k, "-", i))));
    }
  }
  ASSERT_OK(store->Add(jobs, kT0));
  TopicLimit cap;
  cap.concurrency = 2;
  ASSERT_OK(store->SetLimit("mail", cap, kT0));
  // Each shard allows ceil(2 / 3) = 1 at a time: 3 for the topic, not 2.
  ReserveReport report;
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       store->Reserve("mail", 10, kT0, &report));
  EXPECT_EQ(leases.size(), 3u);
  EXPECT_EQ(report.limited_until, absl::InfiniteFuture());
  // The limit as set is what Limits() lists.
  ASSERT_OK_AND_ASSIGN(std::vector<LimitedTopic> limits, store->Limits());
  ASSERT_EQ(limits.size(), 1u);
  EXPECT_EQ(limits[0].limit, cap);
  ASSERT_OK_AND_ASSIGN(std::vector<LimitedTopic> on_shard,
                       store->shard(1).Limits());
  ASSERT_EQ(on_shard.size(), 1u);
  EXPECT_EQ(on_shard[0].limit.concurrency, 1);
}

// Counts the kReady news a subscription delivers, to wait for them.
class ReadyNews {
 public:
  NewsCallback Callback() {
    return [this](const StoreNews& n) {
      absl::MutexLock lock(&mu_);
      if (n.kind == StoreNews::Kind::kReady) ++heard_;
    };
  }
  // Whether `n` arrived (waits up to a generous bound, never for a result).
  bool Await(int n) {
    absl::MutexLock lock(&mu_);
    wanted_ = n;
    return mu_.AwaitWithTimeout(absl::Condition(this, &ReadyNews::Reached),
                                absl::Seconds(30));
  }

 private:
  bool Reached() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return heard_ >= wanted_;
  }
  absl::Mutex mu_;
  int heard_ ABSL_GUARDED_BY(mu_) = 0;
  int wanted_ ABSL_GUARDED_BY(mu_) = 0;
};

std::vector<int64_t> Calls(const ShardedRedisBackend& store) {
  std::vector<int64_t> calls;
  for (int k = 0; k < kShards; ++k) {
    calls.push_back(store.ReserveCallsForTesting(k));
  }
  return calls;
}

TEST(RedisShardedTest, ReserveAsksOnlyShardsThatMayHaveWork) {
  const RedisOptions options = ShardedOptions();
  auto consumer = OpenSharded(options);
  auto producer = OpenSharded(options);
  ASSERT_NE(consumer, nullptr);
  ASSERT_NE(producer, nullptr);
  ReadyNews news;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NewsSubscription> subscription,
                       consumer->Subscribe(news.Callback()));
  ASSERT_OK_AND_ASSIGN(absl::Time next, consumer->NextDue());
  EXPECT_EQ(next, absl::InfiniteFuture());
  // Nothing is known at first: every shard is asked once, and found empty.
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> got,
                       consumer->Reserve("mail", 1, kT0));
  EXPECT_THAT(got, IsEmpty());
  EXPECT_THAT(Calls(*consumer), ElementsAre(1, 1, 1));
  ASSERT_OK_AND_ASSIGN(got, consumer->Reserve("mail", 1, kT0));
  EXPECT_THAT(Calls(*consumer), ElementsAre(1, 1, 1)) << "no shard asked";

  // Another process adds a job on shard 1: its news names that shard.
  ASSERT_OK(producer->Add({MailJob(IdOn(1, "p"))}, kT0));
  ASSERT_TRUE(news.Await(1));
  ASSERT_OK_AND_ASSIGN(got, consumer->Reserve("mail", 1, kT0));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_THAT(Calls(*consumer), ElementsAre(1, 2, 1));
  // That reserve was not short: shard 1 is still flagged, asked once more.
  ASSERT_OK_AND_ASSIGN(got, consumer->Reserve("mail", 1, kT0));
  EXPECT_THAT(got, IsEmpty());
  EXPECT_THAT(Calls(*consumer), ElementsAre(1, 3, 1));
  ASSERT_OK_AND_ASSIGN(got, consumer->Reserve("mail", 1, kT0));
  EXPECT_THAT(Calls(*consumer), ElementsAre(1, 3, 1));

  // The consumer's own add on shard 2 flags it at once.
  ASSERT_OK(consumer->Add({MailJob(IdOn(2, "own"))}, kT0));
  ASSERT_OK_AND_ASSIGN(got, consumer->Reserve("mail", 1, kT0));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_THAT(Calls(*consumer), ElementsAre(1, 3, 2));

  // A delayed job on shard 0 comes due without news of a ready job; the
  // shard's horizon (its kDue news) makes the reserve at its time ask it.
  ASSERT_OK(
      producer->Add({MailJob(IdOn(0, "later"), kT0 + absl::Seconds(5))}, kT0));
  ASSERT_OK_AND_ASSIGN(next, consumer->NextDue());
  EXPECT_EQ(next, kT0 + absl::Seconds(5));
  ASSERT_OK_AND_ASSIGN(got,
                       consumer->Reserve("mail", 1, kT0 + absl::Seconds(1)));
  EXPECT_THAT(got, IsEmpty());
  const std::vector<int64_t> before = Calls(*consumer);
  ASSERT_OK_AND_ASSIGN(got,
                       consumer->Reserve("mail", 1, kT0 + absl::Seconds(5)));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].job.id, IdOn(0, "later"));
  EXPECT_EQ(Calls(*consumer)[0], before[0] + 1);
}

TEST(RedisShardedTest, WithoutNewsEveryShardIsAsked) {
  auto store = OpenSharded(ShardedOptions());
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> got,
                         store->Reserve("mail", 1, kT0));
    EXPECT_THAT(got, IsEmpty());
  }
  EXPECT_THAT(Calls(*store), ElementsAre(2, 2, 2));
}

TEST(RedisShardedTest, ReserveTakesTheShardsInTurn) {
  auto store = OpenSharded(ShardedOptions());
  ASSERT_NE(store, nullptr);
  std::vector<NewJob> jobs;
  for (int k = 0; k < kShards; ++k) {
    for (int i = 0; i < 2; ++i) {
      jobs.push_back(MailJob(IdOn(k, absl::StrCat("s", k, "-", i))));
    }
  }
  ASSERT_OK(store->Add(jobs, kT0));
  std::vector<int> shards;
  for (int i = 0; i < 2 * kShards; ++i) {
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> got,
                         store->Reserve("mail", 1, kT0));
    ASSERT_EQ(got.size(), 1u);
    shards.push_back(redis_internal::ShardOfJob(got[0].job.id, kShards));
  }
  EXPECT_THAT(shards, ElementsAre(0, 1, 2, 0, 1, 2));
}

TEST(RedisShardedTest, TheShardCountOfANamespaceCannotChange) {
  RedisOptions options = ShardedOptions();
  {
    auto store = OpenSharded(options);
    ASSERT_NE(store, nullptr);
  }
  options.shards = 4;
  absl::StatusOr<std::unique_ptr<Backend>> other = OpenRedisBackend(options);
  EXPECT_TRUE(absl::IsFailedPrecondition(other.status())) << other.status();
  EXPECT_THAT(other.status().message(), ::testing::HasSubstr("shards=3"));
  options.shards = 1;
  other = OpenRedisBackend(options);
  EXPECT_TRUE(absl::IsFailedPrecondition(other.status())) << other.status();
  // A namespace named like another's shard is refused too.
  RedisOptions shard_one = options;
  shard_one.ns = redis_internal::ShardNamespace(options.ns, 1);
  other = OpenRedisBackend(shard_one);
  EXPECT_TRUE(absl::IsFailedPrecondition(other.status())) << other.status();
  EXPECT_THAT(other.status().message(), ::testing::HasSubstr("shard 1 of 3"));

  // An unsharded namespace with jobs cannot become sharded.
  RedisOptions plain = testing::FreshRedisOptions();
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> store,
                         OpenRedisBackend(plain));
    ASSERT_OK(store->Add({MailJob("j")}, kT0));
  }
  plain.shards = 2;
  other = OpenRedisBackend(plain);
  EXPECT_TRUE(absl::IsFailedPrecondition(other.status())) << other.status();
  EXPECT_THAT(other.status().message(), ::testing::HasSubstr("shards=1"));
}

TEST(RedisShardedTest, UnshardedKeysAreAsTheyWere) {
  const RedisOptions plain = testing::FreshRedisOptions();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> store, OpenRedisBackend(plain));
  ASSERT_OK(store->Add({MailJob("j")}, kT0));
  const std::vector<std::string> meta =
      RawCommand(testing::SharedRedisServer().port(),
                 {"HKEYS", absl::StrCat("{", plain.ns, "}:meta")});
  EXPECT_THAT(meta, ElementsAre("layout"));
}

}  // namespace
}  // namespace delayq
