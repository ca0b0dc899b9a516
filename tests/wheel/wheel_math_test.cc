// Unit tests of the wheel's small pure helpers and of TickConverter.

#include <cstdint>

#include "absl/time/time.h"
#include "delayq/tick_converter.h"
#include "delayq/timing_wheel.h"
#include "gtest/gtest.h"

namespace delayq {
namespace {

using internal::kWheelRange;
using internal::WheelDistanceToOccupied;
using internal::WheelLevelFor;
using internal::WheelSlotFor;
using internal::WheelSlotRange;

TEST(WheelMathTest, SlotRangeIsPowerOf64) {
  EXPECT_EQ(WheelSlotRange(0), 1u);
  EXPECT_EQ(WheelSlotRange(1), 64u);
  EXPECT_EQ(WheelSlotRange(2), 4096u);
  EXPECT_EQ(WheelSlotRange(5), uint64_t{1} << 30);
  EXPECT_EQ(kWheelRange, uint64_t{1} << 36);
}

TEST(WheelMathTest, LevelForFromZero) {
  EXPECT_EQ(WheelLevelFor(0, 0), 0);
  EXPECT_EQ(WheelLevelFor(0, 1), 0);
  EXPECT_EQ(WheelLevelFor(0, 63), 0);
  EXPECT_EQ(WheelLevelFor(0, 64), 1);
  EXPECT_EQ(WheelLevelFor(0, 4095), 1);
  EXPECT_EQ(WheelLevelFor(0, 4096), 2);
  EXPECT_EQ(WheelLevelFor(0, (uint64_t{1} << 18) - 1), 2);
  EXPECT_EQ(WheelLevelFor(0, uint64_t{1} << 18), 3);
  EXPECT_EQ(WheelLevelFor(0, uint64_t{1} << 24), 4);
  EXPECT_EQ(WheelLevelFor(0, uint64_t{1} << 30), 5);
  EXPECT_EQ(WheelLevelFor(0, kWheelRange - 1), 5);
}

TEST(WheelMathTest, LevelForDependsOnHighestDifferingBit) {
  // Same 64-tick block: level 0 even though the distance is large-ish.
  EXPECT_EQ(WheelLevelFor(64, 127), 0);
  // Distance 1, but across a 64-tick boundary: level 1.
  EXPECT_EQ(WheelLevelFor(63, 64), 1);
  // Distance 1 across a 4096-tick boundary: level 2.
  EXPECT_EQ(WheelLevelFor(4095, 4096), 2);
  EXPECT_EQ(WheelLevelFor(1000, 1000), 0);
}

TEST(WheelMathTest, LevelForClampsBeyondRangeToTopLevel) {
  EXPECT_EQ(WheelLevelFor(0, kWheelRange), 5);
  EXPECT_EQ(WheelLevelFor(0, kWheelRange * 1000 + 17), 5);
  EXPECT_EQ(WheelLevelFor(kWheelRange - 1, kWheelRange), 5);
  EXPECT_EQ(WheelLevelFor(5, uint64_t{1} << 62), 5);
}

TEST(WheelMathTest, SlotFor) {
  EXPECT_EQ(WheelSlotFor(0, 0), 0);
  EXPECT_EQ(WheelSlotFor(63, 0), 63);
  EXPECT_EQ(WheelSlotFor(64, 0), 0);
  EXPECT_EQ(WheelSlotFor(64, 1), 1);
  EXPECT_EQ(WheelSlotFor(4095, 1), 63);
  EXPECT_EQ(WheelSlotFor(4096, 1), 0);
  EXPECT_EQ(WheelSlotFor(4096, 2), 1);
  EXPECT_EQ(WheelSlotFor((uint64_t{37} << 30) + 5, 5), 37);
  // Beyond the range the top-level slot wraps round.
  EXPECT_EQ(WheelSlotFor(kWheelRange + (uint64_t{3} << 30), 5), 3);
}

TEST(WheelMathTest, DistanceToOccupied) {
  const uint64_t slot5 = uint64_t{1} << 5;
  EXPECT_EQ(WheelDistanceToOccupied(slot5, 5), 0);
  EXPECT_EQ(WheelDistanceToOccupied(slot5, 3), 2);
  EXPECT_EQ(WheelDistanceToOccupied(slot5, 0), 5);
  // Past the occupied slot: go round.
  EXPECT_EQ(WheelDistanceToOccupied(slot5, 6), 63);
  EXPECT_EQ(WheelDistanceToOccupied(slot5, 63), 6);
  // The nearest of several.
  const uint64_t slots = (uint64_t{1} << 2) | (uint64_t{1} << 40);
  EXPECT_EQ(WheelDistanceToOccupied(slots, 3), 37);
  EXPECT_EQ(WheelDistanceToOccupied(slots, 41), 25);
  EXPECT_EQ(WheelDistanceToOccupied(~uint64_t{0}, 17), 0);
}

TEST(WheelMathTest, LanesSpreadDeadlinesEvenly) {
  // Deadlines that are all multiples of a round number (a second, in 1 ms
  // ticks) must still spread over every lane.
  for (const uint64_t step : {uint64_t{1}, uint64_t{64}, uint64_t{1000}}) {
    int count[internal::kWheelLanes] = {};
    const int n = 4000;
    for (int i = 0; i < n; ++i) {
      const int lane = internal::WheelLaneFor(step * i);
      ASSERT_GE(lane, 0);
      ASSERT_LT(lane, internal::kWheelLanes);
      ++count[lane];
    }
    for (const int c : count) {
      EXPECT_GT(c, n / internal::kWheelLanes / 2) << "step " << step;
    }
  }
  EXPECT_EQ(internal::WheelLaneFor(123456789),
            internal::WheelLaneFor(123456789));
}

class TickConverterTest : public ::testing::Test {
 protected:
  const absl::Time origin_ = absl::FromUnixSeconds(1'700'000'000);
  const TickConverter ms_{origin_, absl::Milliseconds(1)};
};

TEST_F(TickConverterTest, CeilRoundsUp) {
  EXPECT_EQ(ms_.CeilTicks(origin_), 0u);
  EXPECT_EQ(ms_.CeilTicks(origin_ + absl::Nanoseconds(1)), 1u);
  EXPECT_EQ(ms_.CeilTicks(origin_ + absl::Milliseconds(1)), 1u);
  EXPECT_EQ(
      ms_.CeilTicks(origin_ + absl::Milliseconds(1) + absl::Nanoseconds(1)),
      2u);
  EXPECT_EQ(ms_.CeilTicks(origin_ + absl::Seconds(90)), 90'000u);
}

TEST_F(TickConverterTest, FloorRoundsDown) {
  EXPECT_EQ(ms_.FloorTicks(origin_), 0u);
  EXPECT_EQ(ms_.FloorTicks(origin_ + absl::Nanoseconds(1)), 0u);
  EXPECT_EQ(
      ms_.FloorTicks(origin_ + absl::Milliseconds(1) - absl::Nanoseconds(1)),
      0u);
  EXPECT_EQ(ms_.FloorTicks(origin_ + absl::Milliseconds(1)), 1u);
  EXPECT_EQ(ms_.FloorTicks(origin_ + absl::Microseconds(2500)), 2u);
}

TEST_F(TickConverterTest, BeforeOriginIsTickZero) {
  EXPECT_EQ(ms_.CeilTicks(origin_ - absl::Seconds(5)), 0u);
  EXPECT_EQ(ms_.FloorTicks(origin_ - absl::Seconds(5)), 0u);
  EXPECT_EQ(ms_.CeilTicks(absl::InfinitePast()), 0u);
}

TEST_F(TickConverterTest, InfiniteFutureSaturates) {
  EXPECT_EQ(ms_.CeilTicks(absl::InfiniteFuture()), TickConverter::kMaxTick);
  EXPECT_EQ(ms_.FloorTicks(absl::InfiniteFuture()), TickConverter::kMaxTick);
}

TEST_F(TickConverterTest, TimeOfAndRoundTrip) {
  EXPECT_EQ(ms_.TimeOf(0), origin_);
  EXPECT_EQ(ms_.TimeOf(5), origin_ + absl::Milliseconds(5));
  EXPECT_EQ(ms_.tick(), absl::Milliseconds(1));
  for (uint64_t tick : {uint64_t{0}, uint64_t{1}, uint64_t{63},
                        uint64_t{86'400'000}, internal::kWheelRange}) {
    EXPECT_EQ(ms_.CeilTicks(ms_.TimeOf(tick)), tick);
    EXPECT_EQ(ms_.FloorTicks(ms_.TimeOf(tick)), tick);
  }
}

TEST_F(TickConverterTest, OddTickLength) {
  const TickConverter odd(origin_, absl::Milliseconds(3));
  EXPECT_EQ(odd.CeilTicks(origin_ + absl::Milliseconds(7)), 3u);
  EXPECT_EQ(odd.FloorTicks(origin_ + absl::Milliseconds(7)), 2u);
  EXPECT_EQ(odd.CeilTicks(origin_ + absl::Milliseconds(9)), 3u);
  EXPECT_EQ(odd.FloorTicks(origin_ + absl::Milliseconds(9)), 3u);
  // Rounded up, a deadline's tick never starts before the deadline; rounded
  // down, "now"'s tick never starts after now.
  const absl::Time t = origin_ + absl::Microseconds(12'345);
  EXPECT_GE(odd.TimeOf(odd.CeilTicks(t)), t);
  EXPECT_LE(odd.TimeOf(odd.FloorTicks(t)), t);
}

}  // namespace
}  // namespace delayq
