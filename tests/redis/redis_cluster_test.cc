// Copyright delayq authors.
//
// The Redis store on a real Redis Cluster: three primaries with a replica
// each, made with `redis-cli --cluster create`. The conformance and news
// suites run on it, each test in a namespace of its own (so in a slot of
// its own, on whichever primary serves it). Then what a cluster adds: the
// store finds the node that serves its slot from any seed, follows the
// slot when it is migrated while jobs flow (nothing lost, nothing done
// twice), and follows a failover when that node is killed.

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "backends/redis/client/cluster.h"
#include "backends/redis/internal/keys.h"
#include "backends/redis/sharded_backend.h"
#include "delayq/open.h"
#include "delayq/redis_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/conformance/batch_conformance.h"
#include "tests/conformance/dependency_conformance.h"
#include "tests/conformance/news_conformance.h"
#include "tests/redis/redis_test_cluster.h"
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
using ::delayq::testing::RedisCluster;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

// The binary's cluster for the suites, made on first use; a failure aborts
// the binary with the reason (the tests must fail, not skip).
RedisCluster& Shared() {
  static RedisCluster* cluster = [] {
    absl::StatusOr<std::unique_ptr<RedisCluster>> c = RedisCluster::Start();
    if (!c.ok()) {
      fprintf(stderr, "FATAL: cannot start a Redis Cluster: %s\n",
              c.status().ToString().c_str());
      abort();
    }
    return c->release();
  }();
  return *cluster;
}

std::string FreshNamespace() {
  static std::atomic<int> counter{0};
  return absl::StrCat("c", getpid(), "-", counter.fetch_add(1));
}

RedisOptions ClusterOptions(const RedisCluster& cluster) {
  RedisOptions o;
  o.cluster_nodes = cluster.Seeds();
  o.ns = FreshNamespace();
  o.max_clock_skew = absl::InfiniteDuration();
  // The suites check what the store does, not how fast: on a loaded machine
  // one script holding the results of 10,000 dependencies outlasted the
  // default 2 s. Tests of a lost node set a short timeout of their own.
  o.command_timeout = absl::Seconds(20);
  return o;
}

INSTANTIATE_TEST_SUITE_P(RedisCluster, BackendConformanceTest,
                         ::testing::Values(testing::BackendFactory{
                             "redis_cluster",
                             []() -> absl::StatusOr<std::unique_ptr<Backend>> {
                               return OpenRedisBackend(
                                   ClusterOptions(Shared()));
                             },
                             /*limit_share=*/nullptr, /*model_steps=*/1000}),
                         testing::BackendFactoryName);

const testing::BackendFactory kCluster{
    "redis_cluster", []() -> absl::StatusOr<std::unique_ptr<Backend>> {
      return OpenRedisBackend(ClusterOptions(Shared()));
    }};
INSTANTIATE_TEST_SUITE_P(RedisCluster, DependencyConformanceTest,
                         ::testing::Values(kCluster),
                         testing::BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(RedisCluster, DependencyResultsTest,
                         ::testing::Values(kCluster),
                         testing::BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(RedisCluster, BatchConformanceTest,
                         ::testing::Values(kCluster),
                         testing::BackendFactoryName);

testing::NewsPair OpenClusterNewsPair() {
  const RedisOptions options = ClusterOptions(Shared());
  return testing::OpenNewsPair([&] { return OpenRedisBackend(options); },
                               options.ns);
}

INSTANTIATE_TEST_SUITE_P(
    RedisCluster, NewsConformanceTest,
    ::testing::Values(testing::NewsStore{"redis_cluster", OpenClusterNewsPair}),
    [](const ::testing::TestParamInfo<testing::NewsStore>& info) {
      return info.param.name;
    });

// A namespace over four hash tags (RedisOptions::shards), so over the
// slots of (most likely) every primary.
constexpr int kShards = 4;

RedisOptions ShardedClusterOptions(const RedisCluster& cluster) {
  RedisOptions o = ClusterOptions(cluster);
  o.shards = kShards;
  return o;
}

INSTANTIATE_TEST_SUITE_P(RedisClusterSharded, BackendConformanceTest,
                         ::testing::Values(testing::BackendFactory{
                             "redis_cluster_sharded",
                             []() -> absl::StatusOr<std::unique_ptr<Backend>> {
                               return OpenRedisBackend(
                                   ShardedClusterOptions(Shared()));
                             },
                             [](const TopicLimit& limit) {
                               return ShardShareOfLimit(limit, kShards);
                             },
                             /*model_steps=*/500}),
                         testing::BackendFactoryName);

const testing::BackendFactory kShardedCluster{
    "redis_cluster_sharded", []() -> absl::StatusOr<std::unique_ptr<Backend>> {
      return OpenRedisBackend(ShardedClusterOptions(Shared()));
    }};
// The suites' jobs share a tag ({f}, {b}), so each test's jobs lie on one
// shard.
INSTANTIATE_TEST_SUITE_P(RedisClusterSharded, DependencyConformanceTest,
                         ::testing::Values(kShardedCluster),
                         testing::BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(RedisClusterSharded, DependencyResultsTest,
                         ::testing::Values(kShardedCluster),
                         testing::BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(RedisClusterSharded, BatchConformanceTest,
                         ::testing::Values(kShardedCluster),
                         testing::BackendFactoryName);

testing::NewsPair OpenShardedClusterNewsPair() {
  const RedisOptions options = ShardedClusterOptions(Shared());
  return testing::OpenNewsPair([&] { return OpenRedisBackend(options); },
                               options.ns);
}

INSTANTIATE_TEST_SUITE_P(
    RedisClusterSharded, NewsConformanceTest,
    ::testing::Values(testing::NewsStore{"redis_cluster_sharded",
                                         OpenShardedClusterNewsPair}),
    [](const ::testing::TestParamInfo<testing::NewsStore>& info) {
      return info.param.name;
    });

// The namespace's slot, as the server computes it.
int SlotOf(const RedisCluster& cluster, const std::string& ns) {
  const std::vector<std::string> slot = RawCommand(
      cluster.Seeds()[0].port, {"CLUSTER", "KEYSLOT", "{" + ns + "}:x"});
  int n = -1;
  EXPECT_EQ(slot.size(), 1u);
  if (!slot.empty()) {
    EXPECT_TRUE(absl::SimpleAtoi(slot[0], &n)) << slot[0];
  }
  return n;
}

NewJob ReadyJob(const std::string& id) {
  return testing::PlainJob(id, "mail", kT0);
}

TEST(KeySlotTest, AgreesWithTheServer) {
  for (const std::string key :
       {"123456789", "{delayq}:jobs", "{orders}:ready:mail", "a{}b", "{}x",
        "x{y", "plain", "{a}{b}", "\xff\x10"}) {
    const std::vector<std::string> slot =
        RawCommand(Shared().Seeds()[0].port, {"CLUSTER", "KEYSLOT", key});
    ASSERT_EQ(slot.size(), 1u);
    EXPECT_EQ(absl::StrCat(redis_internal::KeySlot(key)), slot[0]) << key;
  }
  EXPECT_EQ(redis_internal::KeySlot("123456789"), 0x31C3);
}

TEST(RedisClusterTest, AShardedNamespaceSpreadsOverThePrimaries) {
  RedisCluster& cluster = Shared();
  const RedisOptions options = ShardedClusterOptions(cluster);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> store,
                       OpenRedisBackend(options));
  std::vector<NewJob> jobs;
  for (int i = 0; i < 40; ++i) jobs.push_back(ReadyJob(absl::StrCat("j", i)));
  ASSERT_OK(store->Add(jobs, kT0));
  std::set<int> owners;
  int total = 0;
  for (int k = 0; k < kShards; ++k) {
    const std::string ns = redis_internal::ShardNamespace(options.ns, k);
    const int owner = cluster.OwnerOf(SlotOf(cluster, ns));
    ASSERT_NE(owner, 0);
    owners.insert(owner);
    const std::vector<std::string> n =
        RawCommand(owner, {"HLEN", redis_internal::KeyLayout(ns).Jobs()});
    ASSERT_EQ(n.size(), 1u);
    EXPECT_GT(std::stoi(n[0]), 0) << "shard " << k << " holds no job";
    total += std::stoi(n[0]);
  }
  EXPECT_EQ(total, 40);
  EXPECT_GE(owners.size(), 2u) << "every shard on one primary";
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       store->Reserve("mail", 100, kT0));
  EXPECT_EQ(leases.size(), 40u);
}

TEST(RedisClusterTest, AnySeedLeadsToTheNodeThatServesTheSlot) {
  RedisCluster& cluster = Shared();
  RedisOptions options = ClusterOptions(cluster);
  const int owner = cluster.OwnerOf(SlotOf(cluster, options.ns));
  ASSERT_NE(owner, 0);
  // One seed that does not serve the slot: its map leads on.
  options.cluster_nodes = {{"127.0.0.1", cluster.OtherPrimary(owner)}};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> store,
                       OpenRedisBackend(options));
  ASSERT_OK(store->Add({ReadyJob("j1")}, kT0));
  const std::vector<std::string> keys =
      RawCommand(owner, {"CLUSTER", "COUNTKEYSINSLOT",
                         absl::StrCat(SlotOf(cluster, options.ns))});
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_NE(keys[0], "0")
      << "the jobs are not on the node that serves the slot";
}

TEST(RedisClusterTest, AUrlOpensAClusterStore) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Backend> store,
      OpenBackend(absl::StrCat("redis+cluster://", Shared().SeedList(),
                               "?namespace=", FreshNamespace(),
                               "&max_skew_ms=off")));
  ASSERT_OK(store->Add({ReadyJob("u1")}, kT0));
  EXPECT_OK(store->Get("u1").status());
}

// Producers and consumers that retry what the cluster refuses for a while
// (Unavailable, DeadlineExceeded), as a worker would.
class Flow {
 public:
  Flow(Backend* store, int jobs) : store_(store), jobs_(jobs) {}

  void Run(absl::Duration limit) {
    deadline_ = absl::Now() + limit;
    std::thread producer([this] { Produce(); });
    std::thread consumer([this] { Consume(); });
    producer.join();
    consumer.join();
  }

  int refused() const { return refused_.load(); }
  // Every id acked once, and how many acks succeeded in all.
  std::set<std::string> acked() const {
    absl::MutexLock lock(&mu_);
    return acked_;
  }
  int acks() const { return acks_.load(); }

 private:
  bool Transient(const absl::Status& s) {
    if (absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)) {
      ++refused_;
      absl::SleepFor(absl::Milliseconds(5));
      return true;
    }
    return false;
  }

  void Produce() {
    for (int i = 0; i < jobs_ && absl::Now() < deadline_; ++i) {
      for (;;) {
        const absl::Status s =
            store_->Add({ReadyJob(absl::StrCat("j", i))}, kT0);
        // AlreadyExists: an earlier try that timed out did add it.
        if (s.ok() || absl::IsAlreadyExists(s)) break;
        if (!Transient(s) || absl::Now() > deadline_) {
          ADD_FAILURE() << "add j" << i << ": " << s;
          return;
        }
      }
      absl::SleepFor(absl::Milliseconds(1));
    }
  }

  void Consume() {
    while (acks_.load() < jobs_ && absl::Now() < deadline_) {
      absl::StatusOr<std::vector<Lease>> leases =
          store_->Reserve("mail", 16, kT0);
      if (!leases.ok()) {
        if (!Transient(leases.status())) {
          ADD_FAILURE() << "reserve: " << leases.status();
          return;
        }
        continue;
      }
      if (leases->empty()) absl::SleepFor(absl::Milliseconds(2));
      for (const Lease& lease : *leases) Ack(lease);
    }
  }

  void Ack(const Lease& lease) {
    for (;;) {
      const absl::Status s =
          store_->Ack(lease.job.id, lease.token, /*result=*/"", kT0);
      if (s.ok()) {
        ++acks_;
        absl::MutexLock lock(&mu_);
        EXPECT_TRUE(acked_.insert(lease.job.id).second)
            << lease.job.id << " acked twice";
        return;
      }
      if (!Transient(s)) {
        // An ack that timed out may have been done: the retry finds the
        // job gone. Only that is forgiven.
        EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
        absl::MutexLock lock(&mu_);
        acked_.insert(lease.job.id);
        return;
      }
    }
  }

  Backend* const store_;
  const int jobs_;
  absl::Time deadline_;
  std::atomic<int> refused_{0};
  std::atomic<int> acks_{0};
  mutable absl::Mutex mu_;
  std::set<std::string> acked_ ABSL_GUARDED_BY(mu_);
};

TEST(RedisClusterTest, ASlotMigratedWhileJobsFlowLosesAndRepeatsNothing) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCluster> cluster,
                       RedisCluster::Start());
  const RedisOptions options = ClusterOptions(*cluster);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> store,
                       OpenRedisBackend(options));
  const int slot = SlotOf(*cluster, options.ns);
  const int from = cluster->OwnerOf(slot);
  const int to = cluster->OtherPrimary(from);
  ASSERT_NE(to, 0);
  constexpr int kJobs = 2000;
  Flow flow(store.get(), kJobs);
  std::thread mover([&] {
    absl::SleepFor(absl::Milliseconds(300));
    EXPECT_OK(cluster->MigrateSlot(slot, to, absl::Milliseconds(50)));
  });
  flow.Run(absl::Seconds(60));
  mover.join();
  EXPECT_EQ(cluster->OwnerOf(slot), to);
  EXPECT_EQ(flow.acked().size(), static_cast<size_t>(kJobs));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, store->Stats("mail"));
  EXPECT_EQ(stats.total(), 0);
  // The store kept working on the slot's new node, without a restart.
  ASSERT_OK(store->Add({ReadyJob("after")}, kT0));
  const std::vector<std::string> keys =
      RawCommand(to, {"CLUSTER", "COUNTKEYSINSLOT", absl::StrCat(slot)});
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_NE(keys[0], "0");
  RecordProperty("refused_calls", flow.refused());
  std::printf("slot migration: %d calls refused for a while, %d acks\n",
              flow.refused(), flow.acks());
}

TEST(RedisClusterTest, AKilledPrimaryIsReplacedByItsReplicaWithoutARestart) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCluster> cluster,
                       RedisCluster::Start());
  RedisOptions options = ClusterOptions(*cluster);
  // Each write waits for the replica, so a job whose Add returned OK
  // survives the primary.
  options.wait_replicas = 1;
  options.wait_timeout = absl::Milliseconds(500);
  options.command_timeout = absl::Seconds(1);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> store,
                       OpenRedisBackend(options));
  const int slot = SlotOf(*cluster, options.ns);
  const int primary = cluster->OwnerOf(slot);
  std::vector<std::string> added;
  for (int i = 0; i < 50; ++i) {
    const std::string id = absl::StrCat("before", i);
    ASSERT_OK(store->Add({ReadyJob(id)}, kT0));
    added.push_back(id);
  }
  cluster->Node(primary)->Kill();
  // Calls fail for a while, then reach the promoted replica by themselves.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  absl::Status last;
  int refused = 0;
  while (absl::Now() < deadline) {
    last = store->Add({ReadyJob("after")}, kT0);
    // The promoted replica has no replica of its own (its primary is
    // dead), so WAIT cannot be answered: the add was made there, which is
    // what this test waits for.
    if (IsUnconfirmedWrite(last)) last = absl::OkStatus();
    if (last.ok()) break;
    EXPECT_TRUE(absl::IsUnavailable(last) || absl::IsDeadlineExceeded(last))
        << last;
    ++refused;
    absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_OK(last) << "no new primary within 30 s";
  EXPECT_NE(cluster->OwnerOf(slot), primary);
  for (const std::string& id : added) {
    EXPECT_OK(store->Get(id).status()) << id << " was lost in the failover";
  }
  std::printf("failover: %d calls refused before the replica took over\n",
              refused);
}

}  // namespace
}  // namespace delayq
