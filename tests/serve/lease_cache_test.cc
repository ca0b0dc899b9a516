// Copyright delayq authors.
//
// The server's memory of the leases it handed out: found only under their
// own token, forgotten when taken, the oldest dropped when full, and a
// long-lived lease kept however many others come and go.

#include "tools/serve/lease_cache.h"

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

}  // namespace
}  // namespace serve
}  // namespace delayq
