// Copyright delayq authors.

#include "tests/testing/migrated_waiters.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

NewJob Kept(const std::string& id, absl::Time now) {
  NewJob job;
  job.id = id;
  job.topic = "t";
  job.run_at = now;
  job.keep_for = absl::Hours(1);
  job.keep_at_most = 10;
  return job;
}

NewJob Waiter(const std::string& id, std::vector<std::string> after,
              absl::Time now) {
  NewJob job;
  job.id = id;
  job.topic = "parent";
  job.run_at = now;
  job.after = std::move(after);
  return job;
}

}  // namespace

void AddWaitersBeforeTheLists(Backend& backend, absl::Time now) {
  ASSERT_OK(backend.Add({Kept("met", now)}, now));
  ASSERT_OK(backend.Add(
      {Kept("b", now), Kept("a", now), Waiter("w", {"met", "b", "a"}, now)},
      now));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases, backend.Reserve("t", 1, now));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_EQ(leases[0].job.id, "met");
  ASSERT_OK(backend.Ack("met", leases[0].token, "m", now));
}

void ExpectMigratedWaiters(Backend& backend, absl::Time now) {
  ASSERT_OK_AND_ASSIGN(Job w, backend.Get("w"));
  EXPECT_EQ(w.state, JobState::kWaiting);
  EXPECT_THAT(w.after, ElementsAre("a", "b"));

  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend.Reserve("t", 10, now));
  ASSERT_EQ(leases.size(), 2u);
  for (const Lease& lease : leases) {
    ASSERT_OK(backend.Ack(lease.job.id, lease.token, "r" + lease.job.id, now));
  }
  ASSERT_OK_AND_ASSIGN(leases, backend.Reserve("parent", 10, now));
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_THAT(leases[0].dependency_results,
              ElementsAre(Pair("a", "ra"), Pair("b", "rb")));
  ASSERT_OK(backend.Ack("w", leases[0].token, "", now));

  ASSERT_OK(backend.Add({Waiter("w2", {"b", "met", "a"}, now)}, now));
  ASSERT_OK_AND_ASSIGN(Job w2, backend.Get("w2"));
  EXPECT_EQ(w2.state, JobState::kReady);
  EXPECT_THAT(w2.after, ElementsAre("b", "met", "a"));
  ASSERT_OK(backend.Cancel("w2", now));
}

}  // namespace testing
}  // namespace delayq
