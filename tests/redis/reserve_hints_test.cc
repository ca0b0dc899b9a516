// Copyright delayq authors.
//
// ReserveHints on its own: which shards a reserve asks, and that news
// arriving while a reserve runs keeps its shard flagged.

#include "backends/redis/internal/reserve_hints.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace delayq {
namespace redis_internal {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

// Every flag of `topic` cleared by reserves that found nothing, and every
// horizon read as "nothing pending".
void Drain(ReserveHints& hints, absl::string_view topic) {
  for (int k = 0; k < hints.shards(); ++k) {
    hints.Horizon(k, absl::InfiniteFuture(), hints.HorizonEpoch(k));
  }
  const ReserveHints::Plan plan = hints.Begin(topic, kT0);
  for (int k : plan.order) hints.Drained(topic, k, plan.epochs[k]);
}

TEST(ReserveHintsTest, WithoutNewsEveryShardIsAsked) {
  ReserveHints hints(3);
  Drain(hints, "t");
  EXPECT_THAT(hints.Begin("t", kT0).order, ElementsAre(0, 1, 2));
  EXPECT_TRUE(hints.MayBeDue(1, kT0));
}

TEST(ReserveHintsTest, OnlyFlaggedShardsAreAskedInTurn) {
  ReserveHints hints(3);
  hints.Activate();
  EXPECT_THAT(hints.Begin("t", kT0).order, ElementsAre(0, 1, 2));
  Drain(hints, "t");
  EXPECT_THAT(hints.Begin("t", kT0).order, IsEmpty());
  EXPECT_THAT(hints.Begin("other", kT0).order, ElementsAre(0, 1, 2));
  hints.Ready(2, "t");
  hints.Ready(0, "t");
  EXPECT_THAT(hints.Begin("t", kT0).order, ElementsAre(0, 2));
  hints.Served("t", 0);
  EXPECT_THAT(hints.Begin("t", kT0).order, ElementsAre(2, 0));
}

TEST(ReserveHintsTest, NewsDuringAReserveKeepsTheFlag) {
  ReserveHints hints(2);
  hints.Activate();
  Drain(hints, "t");
  hints.Ready(1, "t");
  const ReserveHints::Plan plan = hints.Begin("t", kT0);
  ASSERT_THAT(plan.order, ElementsAre(1));
  hints.Ready(1, "t");  // a job came while the reserve ran
  hints.Drained("t", 1, plan.epochs[1]);
  EXPECT_THAT(hints.Begin("t", kT0).order, ElementsAre(1));
  // A resync of the shard counts as news too.
  const ReserveHints::Plan again = hints.Begin("t", kT0);
  hints.Resync(1);
  hints.Drained("t", 1, again.epochs[1]);
  EXPECT_THAT(hints.Begin("t", kT0).order, ElementsAre(1));
}

TEST(ReserveHintsTest, AShardIsAskedOnceItsHorizonComes) {
  ReserveHints hints(2);
  hints.Activate();
  Drain(hints, "t");
  hints.Due(1, kT0 + absl::Seconds(5));
  EXPECT_THAT(hints.Begin("t", kT0 + absl::Seconds(4)).order, IsEmpty());
  EXPECT_FALSE(hints.MayBeDue(1, kT0 + absl::Seconds(4)));
  EXPECT_THAT(hints.Begin("t", kT0 + absl::Seconds(5)).order, ElementsAre(1));
  EXPECT_TRUE(hints.MayBeDue(1, kT0 + absl::Seconds(5)));
  // A NextDue() read that a kDue overtook does not raise the horizon.
  const uint64_t epoch = hints.HorizonEpoch(0);
  hints.Due(0, kT0 + absl::Seconds(3));
  hints.Horizon(0, kT0 + absl::Seconds(9), epoch);
  EXPECT_TRUE(hints.MayBeDue(0, kT0 + absl::Seconds(3)));
}

TEST(ReserveHintsTest, ASubscriptionStartsFromEverythingMayHaveWork) {
  ReserveHints hints(2);
  hints.Activate();
  Drain(hints, "t");
  hints.Deactivate();
  hints.Activate();
  EXPECT_THAT(hints.Begin("t", kT0).order, ElementsAre(0, 1));
}

}  // namespace
}  // namespace redis_internal
}  // namespace delayq
