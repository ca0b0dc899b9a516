// Copyright delayq authors.
//
// The server's memory of the leases it handed out: found only under their
// own token, forgotten when taken, the oldest dropped when full, and a
// long-lived lease kept however many others come and go.

#include "tools/serve/api/lease_cache.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace delayq {
namespace serve {
namespace {

Lease MakeLease(const std::string& id, uint64_t token) {
  Lease lease;
  lease.job.id = id;
  lease.job.topic = "t";
  lease.job.payload = "a payload the cache need not keep";
  lease.job.attempts = 2;
  lease.job.last_error = "an error the cache need not keep";
  lease.job.expire_at = absl::FromUnixSeconds(500);
  lease.job.unique_for = absl::Hours(1);
  lease.token = token;
  lease.deadline = absl::FromUnixSeconds(100);
  return lease;
}

TEST(LeaseCacheTest, FindsALeaseOnlyUnderItsToken) {
  LeaseCache cache(10);
  cache.Put(MakeLease("a", 7));
  EXPECT_FALSE(cache.Find("a", 8).has_value());
  EXPECT_FALSE(cache.Find("b", 7).has_value());
  std::optional<Lease> found = cache.Find("a", 7);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->job.topic, "t");
  EXPECT_EQ(found->job.attempts, 2);
  EXPECT_EQ(found->deadline, absl::FromUnixSeconds(100));
  EXPECT_TRUE(found->job.payload.empty());
  EXPECT_TRUE(found->job.last_error.empty());
  // Every other field of the job is kept as reserve gave it.
  EXPECT_EQ(found->job.expire_at, absl::FromUnixSeconds(500));
  EXPECT_EQ(found->job.unique_for, absl::Hours(1));
  EXPECT_EQ(cache.size(), 1u);
}

TEST(LeaseCacheTest, TakeForgetsAndANewLeaseReplacesTheOld) {
  LeaseCache cache(10);
  cache.Put(MakeLease("a", 7));
  EXPECT_FALSE(cache.Take("a", 8).has_value());
  cache.Put(MakeLease("a", 9));  // reserved again
  EXPECT_FALSE(cache.Find("a", 7).has_value());
  ASSERT_TRUE(cache.Take("a", 9).has_value());
  EXPECT_FALSE(cache.Find("a", 9).has_value());
  EXPECT_EQ(cache.size(), 0u);
}

TEST(LeaseCacheTest, PutAllAndTakeAllAreEachLeasesOwnPutAndTake) {
  LeaseCache cache(10);
  cache.PutAll({MakeLease("a", 1), MakeLease("b", 2), MakeLease("c", 3)});
  EXPECT_EQ(cache.size(), 3u);
  std::vector<std::optional<Lease>> taken =
      cache.TakeAll({{"b", 2}, {"a", 9}, {"x", 1}, {"c", 3}, {"b", 2}});
  ASSERT_EQ(taken.size(), 5u);
  ASSERT_TRUE(taken[0].has_value());
  EXPECT_EQ(taken[0]->job.id, "b");
  EXPECT_TRUE(taken[0]->job.payload.empty());
  EXPECT_FALSE(taken[1].has_value());  // a stale token
  EXPECT_FALSE(taken[2].has_value());  // never put
  ASSERT_TRUE(taken[3].has_value());
  EXPECT_EQ(taken[3]->token, 3u);
  EXPECT_FALSE(taken[4].has_value());  // taken already, earlier in the call
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(cache.Find("a", 1).has_value());
}

TEST(LeaseCacheTest, WhenFullTheOldestGoes) {
  LeaseCache cache(3);
  for (int i = 0; i < 5; ++i) cache.Put(MakeLease(absl::StrCat("j", i), 1));
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_FALSE(cache.Find("j0", 1).has_value());
  EXPECT_FALSE(cache.Find("j1", 1).has_value());
  for (int i = 2; i < 5; ++i) {
    EXPECT_TRUE(cache.Find(absl::StrCat("j", i), 1).has_value()) << i;
  }
}

TEST(LeaseCacheTest, ALongLivedLeaseOutlastsManyShortOnes) {
  LeaseCache cache(2);
  cache.Put(MakeLease("long", 1));
  for (int i = 0; i < 10'000; ++i) {
    const std::string id = absl::StrCat("short", i);
    cache.Put(MakeLease(id, 1));
    ASSERT_TRUE(cache.Take(id, 1).has_value()) << i;
  }
  EXPECT_TRUE(cache.Find("long", 1).has_value());
  EXPECT_EQ(cache.size(), 1u);
}

// Slots are reused round and round, with ids short and long (kept in the
// string or on the heap) and a lease replaced in place: each lease found is
// the one put under its id, whole.
TEST(LeaseCacheTest, ReusedSlotsGiveEachLeaseItsOwnFields) {
  LeaseCache cache(4);
  auto id = [](int i) {
    return i % 2 ? absl::StrCat("j", i) : absl::StrCat("a-long-job-id-", i);
  };
  for (int i = 0; i < 1000; ++i) {
    Lease lease = MakeLease(id(i), i);
    lease.job.topic = absl::StrCat("topic-of-", i);
    cache.Put(lease);
    if (i % 3 == 0) {
      lease.token = i + 1;  // reserved again: replaces the lease put above
      cache.Put(lease);
      EXPECT_FALSE(cache.Find(id(i), i).has_value()) << i;
    }
    if (i % 5 == 0) {
      const uint64_t token = i % 3 == 0 ? i + 1 : i;
      std::optional<Lease> taken = cache.Take(id(i), token);
      ASSERT_TRUE(taken.has_value()) << i;
      EXPECT_EQ(taken->job.id, id(i));
      EXPECT_EQ(taken->job.topic, absl::StrCat("topic-of-", i));
    }
    ASSERT_LE(cache.size(), 4u);
  }
  // The last four kept: 999, 998, 997 and 996 (995 was taken, 996's lease
  // replaced by one under the token 997).
  EXPECT_EQ(cache.size(), 4u);
  for (int i = 996; i < 1000; ++i) {
    const uint64_t token = i % 3 == 0 ? i + 1 : i;
    std::optional<Lease> found = cache.Find(id(i), token);
    ASSERT_TRUE(found.has_value()) << i;
    EXPECT_EQ(found->job.id, id(i));
    EXPECT_EQ(found->job.topic, absl::StrCat("topic-of-", i));
    EXPECT_EQ(found->token, token);
  }
}

}  // namespace
}  // namespace serve
}  // namespace delayq
