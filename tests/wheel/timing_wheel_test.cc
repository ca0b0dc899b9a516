// Behaviour tests of TimingWheel: when timers fire, cancel, ordering, far
// deadlines and NextExpiration().

#include "delayq/timing_wheel.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace delayq {
namespace {

using internal::kWheelRange;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Advances `wheel` to `now` and returns the values that fired, in order.
template <typename T>
std::vector<T> AdvanceTo(TimingWheel<T>& wheel, uint64_t now) {
  std::vector<T> fired;
  const size_t n =
      wheel.Advance(now, [&](T&& value) { fired.push_back(std::move(value)); });
  EXPECT_EQ(n, fired.size());
  EXPECT_TRUE(wheel.CheckInvariants());
  return fired;
}

// Deadlines on every level, at slot edges, and beyond the wheel's span.
const uint64_t kDeadlines[] = {
    1,
    2,
    63,
    64,
    65,
    127,
    4095,
    4096,
    4097,
    (uint64_t{1} << 18) + 1,
    (uint64_t{1} << 24) - 1,
    (uint64_t{1} << 30) + 12'345,
    kWheelRange - 1,
    kWheelRange,
    kWheelRange + 1,
    3 * kWheelRange + (uint64_t{7} << 30) + 99,
    (uint64_t{1} << 45) + 5,
};

TEST(TimingWheelTest, StartsEmpty) {
  TimingWheel<int> wheel(42);
  EXPECT_TRUE(wheel.empty());
  EXPECT_EQ(wheel.size(), 0u);
  EXPECT_EQ(wheel.now(), 42u);
  EXPECT_EQ(wheel.NextExpiration(), std::nullopt);
  EXPECT_THAT(AdvanceTo(wheel, 1000), IsEmpty());
  EXPECT_EQ(wheel.now(), 1000u);
}

TEST(TimingWheelTest, NeverEarlyAndFiresAtItsTick) {
  for (const uint64_t start : {uint64_t{0}, uint64_t{1}, uint64_t{4000}}) {
    for (const uint64_t offset : kDeadlines) {
      const uint64_t deadline = start + offset;
      SCOPED_TRACE(testing::Message()
                   << "start " << start << " deadline " << deadline);
      TimingWheel<int> wheel(start);
      wheel.Insert(deadline, 7);
      EXPECT_THAT(AdvanceTo(wheel, deadline - 1), IsEmpty());
      EXPECT_EQ(wheel.size(), 1u);
      EXPECT_THAT(AdvanceTo(wheel, deadline), ElementsAre(7));
      EXPECT_TRUE(wheel.empty());
    }
  }
}

TEST(TimingWheelTest, FollowingNextExpirationReachesTheExactTick) {
  // A host loop that sleeps until NextExpiration() and then advances: the
  // timer must fire exactly when the wheel's time equals its deadline, and
  // every intermediate stop (a cascade) must come before the deadline.
  for (const uint64_t deadline : kDeadlines) {
    SCOPED_TRACE(testing::Message() << "deadline " << deadline);
    TimingWheel<int> wheel(0);
    wheel.Insert(deadline, 1);
    int stops = 0;
    bool fired = false;
    while (!fired) {
      const std::optional<uint64_t> next = wheel.NextExpiration();
      ASSERT_TRUE(next.has_value());
      ASSERT_LE(*next, deadline);
      ASSERT_GE(*next, wheel.now());
      fired = !AdvanceTo(wheel, *next).empty();
      if (fired) {
        EXPECT_EQ(wheel.now(), deadline);
      }
      // One stop per level on the way down, plus one per turn of the top
      // level while the deadline is beyond the wheel's span.
      ASSERT_LE(++stops, deadline / kWheelRange + 12) << "too many stops";
    }
    EXPECT_EQ(wheel.NextExpiration(), std::nullopt);
  }
}

TEST(TimingWheelTest, NextExpirationOnLevelZeroIsTheDeadline) {
  TimingWheel<int> wheel(100);
  wheel.Insert(120, 1);
  wheel.Insert(110, 2);
  EXPECT_EQ(wheel.NextExpiration(), 110u);
}

TEST(TimingWheelTest, NextExpirationOnHigherLevelIsSlotStart) {
  TimingWheel<int> wheel(0);
  wheel.Insert(5000, 1);  // Level 2, slot 1: starts at 4096.
  EXPECT_EQ(wheel.NextExpiration(), 4096u);
  // Cascading at 4096 moves it to level 1, slot (5000 >> 6) & 63 = 14,
  // which starts at 4096 + 14 * 64 = 4992.
  EXPECT_THAT(AdvanceTo(wheel, 4096), IsEmpty());
  EXPECT_EQ(wheel.NextExpiration(), 4992u);
  EXPECT_THAT(AdvanceTo(wheel, 4992), IsEmpty());
  EXPECT_EQ(wheel.NextExpiration(), 5000u);
  EXPECT_THAT(AdvanceTo(wheel, 5000), ElementsAre(1));
}

TEST(TimingWheelTest, NextExpirationTracksTheEarliestAfterCancel) {
  TimingWheel<int> wheel(0);
  const TimerId early = wheel.Insert(10, 1);
  wheel.Insert(50, 2);
  EXPECT_EQ(wheel.NextExpiration(), 10u);
  EXPECT_TRUE(wheel.Cancel(early));
  EXPECT_EQ(wheel.NextExpiration(), 50u);
}

TEST(TimingWheelTest, NextExpirationOfOverdueTimerIsNow) {
  TimingWheel<int> wheel(1000);
  wheel.Insert(10, 1);
  EXPECT_EQ(wheel.NextExpiration(), 1000u);
}

TEST(TimingWheelTest, CancelRemovesTimer) {
  TimingWheel<int> wheel(0);
  const TimerId a = wheel.Insert(100, 1);
  const TimerId b = wheel.Insert(100, 2);
  const TimerId c = wheel.Insert(100'000, 3);
  EXPECT_TRUE(a.valid());
  EXPECT_NE(a, b);
  EXPECT_EQ(wheel.size(), 3u);
  EXPECT_TRUE(wheel.Cancel(a));
  EXPECT_TRUE(wheel.Cancel(c));
  EXPECT_EQ(wheel.size(), 1u);
  EXPECT_FALSE(wheel.Cancel(a)) << "second cancel";
  EXPECT_THAT(AdvanceTo(wheel, 1'000'000), ElementsAre(2));
  EXPECT_FALSE(wheel.Cancel(b)) << "already fired";
  EXPECT_TRUE(wheel.empty());
  EXPECT_EQ(wheel.NextExpiration(), std::nullopt);
}

TEST(TimingWheelTest, CancelAfterCascade) {
  TimingWheel<int> wheel(0);
  const TimerId id = wheel.Insert(10'000, 1);
  wheel.Insert(10'000, 2);
  EXPECT_THAT(AdvanceTo(wheel, 9'990), IsEmpty());  // Now on level 0.
  EXPECT_TRUE(wheel.Cancel(id));
  EXPECT_THAT(AdvanceTo(wheel, 10'000), ElementsAre(2));
}

TEST(TimingWheelTest, StaleAndInvalidIdsAreRefused) {
  TimingWheel<int> wheel(0);
  EXPECT_FALSE(wheel.Cancel(TimerId{}));
  EXPECT_FALSE(TimerId{}.valid());
  EXPECT_FALSE(wheel.Cancel(TimerId{12345, 0}));
  const TimerId old_id = wheel.Insert(5, 1);
  EXPECT_THAT(AdvanceTo(wheel, 5), ElementsAre(1));
  // The new timer reuses the freed slab entry; the old id must not touch it.
  const TimerId new_id = wheel.Insert(10, 2);
  EXPECT_EQ(new_id.index, old_id.index);
  EXPECT_NE(new_id.generation, old_id.generation);
  EXPECT_FALSE(wheel.Cancel(old_id));
  EXPECT_EQ(wheel.size(), 1u);
  EXPECT_FALSE(wheel.Cancel(TimerId{new_id.index, new_id.generation + 1}));
  EXPECT_TRUE(wheel.Cancel(new_id));
}

TEST(TimingWheelTest, SameTickFiresInInsertionOrder) {
  TimingWheel<int> wheel(0);
  wheel.Insert(5000, 1);  // Level 2.
  wheel.Insert(5000, 2);
  AdvanceTo(wheel, 4500);
  wheel.Insert(5000, 3);  // Level 1 by now; the first two cascaded already.
  AdvanceTo(wheel, 4999);
  wheel.Insert(5000, 4);  // Level 0.
  wheel.Insert(4999 + 1, 5);
  EXPECT_THAT(AdvanceTo(wheel, 5000), ElementsAre(1, 2, 3, 4, 5));
}

TEST(TimingWheelTest, FiresInDeadlineOrderAcrossOneAdvance) {
  TimingWheel<int> wheel(0);
  wheel.Insert(kWheelRange + 5, 6);
  wheel.Insert(300'000, 5);
  wheel.Insert(4096, 4);
  wheel.Insert(65, 3);
  wheel.Insert(64, 2);
  wheel.Insert(3, 1);
  EXPECT_THAT(AdvanceTo(wheel, 2 * kWheelRange), ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST(TimingWheelTest, PastDeadlinesFireOnNextAdvanceInDeadlineOrder) {
  TimingWheel<int> wheel(1000);
  wheel.Insert(1000, 3);
  wheel.Insert(500, 2);
  wheel.Insert(1001, 4);
  wheel.Insert(0, 1);
  wheel.Insert(500, 22);
  EXPECT_EQ(wheel.NextExpiration(), 1000u);
  // Advance(now()) is enough for the overdue and the due-now timers.
  EXPECT_THAT(AdvanceTo(wheel, 1000), ElementsAre(1, 2, 22, 3));
  EXPECT_THAT(AdvanceTo(wheel, 1001), ElementsAre(4));
}

TEST(TimingWheelTest, OverdueTimersFireBeforeLaterOnes) {
  TimingWheel<int> wheel(0);
  wheel.Insert(70, 3);
  AdvanceTo(wheel, 60);
  wheel.Insert(10, 1);
  wheel.Insert(65, 2);
  EXPECT_THAT(AdvanceTo(wheel, 100), ElementsAre(1, 2, 3));
}

TEST(TimingWheelTest, EarlierAdvanceIsNoOp) {
  TimingWheel<int> wheel(500);
  wheel.Insert(400, 1);
  EXPECT_EQ(wheel.Advance(499, [](int&&) { ADD_FAILURE(); }), 0u);
  EXPECT_EQ(wheel.now(), 500u);
  EXPECT_EQ(wheel.size(), 1u);
}

TEST(TimingWheelTest, BeyondRangeNeverFiresEarly) {
  const uint64_t deadline = 5 * kWheelRange + (uint64_t{40} << 30) + 777;
  TimingWheel<int> wheel(kWheelRange / 2);
  wheel.Insert(deadline, 1);
  // Move in steps smaller than a turn, so the far timer is re-cascaded on the
  // top level several times before it is in range.
  uint64_t now = wheel.now();
  while (now + kWheelRange / 3 < deadline) {
    now += kWheelRange / 3;
    ASSERT_THAT(AdvanceTo(wheel, now), IsEmpty()) << "now " << now;
    ASSERT_LE(*wheel.NextExpiration(), deadline);
  }
  EXPECT_THAT(AdvanceTo(wheel, deadline - 1), IsEmpty());
  EXPECT_THAT(AdvanceTo(wheel, deadline), ElementsAre(1));
}

TEST(TimingWheelTest, HugeJumpFiresEverythingInOrder) {
  TimingWheel<int> wheel(0);
  std::vector<int> expected;
  int value = 0;
  for (uint64_t deadline = 1; deadline < (uint64_t{1} << 55); deadline *= 3) {
    wheel.Insert(deadline, value);
    expected.push_back(value++);
  }
  const uint64_t last = uint64_t{1} << 56;
  wheel.Insert(last, value);
  expected.push_back(value);
  EXPECT_THAT(AdvanceTo(wheel, last - 1),
              testing::ElementsAreArray(expected.begin(), expected.end() - 1));
  EXPECT_THAT(AdvanceTo(wheel, last), ElementsAre(value));
}

TEST(TimingWheelTest, HugeJumpWithManyFarTimers) {
  // Far timers spread over 2^50 ticks; one Advance must not turn the top
  // level once per 2^36 ticks (that would be 2^14 turns of 64 slots each).
  TimingWheel<uint64_t> wheel(0);
  for (uint64_t i = 1; i <= 1000; ++i) wheel.Insert(i << 40, i);
  EXPECT_EQ(AdvanceTo(wheel, (uint64_t{500} << 40) - 1).size(), 499u);
  EXPECT_LE(wheel.NextExpiration().value(), uint64_t{500} << 40);
  const std::vector<uint64_t> rest = AdvanceTo(wheel, uint64_t{1} << 51);
  ASSERT_EQ(rest.size(), 501u);
  EXPECT_EQ(rest.front(), 500u);
  EXPECT_EQ(rest.back(), 1000u);
}

TEST(TimingWheelTest, DeadlinesAboveMaxTickAreCapped) {
  using Wheel = TimingWheel<int>;
  Wheel wheel(Wheel::kMaxTick - 10);
  wheel.Insert(UINT64_MAX, 1);
  EXPECT_THAT(AdvanceTo(wheel, Wheel::kMaxTick - 1), IsEmpty());
  EXPECT_THAT(AdvanceTo(wheel, UINT64_MAX), ElementsAre(1));
  EXPECT_EQ(wheel.now(), Wheel::kMaxTick);
}

TEST(TimingWheelTest, MoveOnlyValuesAndDestruction) {
  auto alive = std::make_shared<int>(0);
  struct Tracked {
    explicit Tracked(std::shared_ptr<int> c) : counter(std::move(c)) {
      ++*counter;
    }
    Tracked(Tracked&& other) noexcept : counter(other.counter) { ++*counter; }
    Tracked(const Tracked&) = delete;
    ~Tracked() { --*counter; }
    std::shared_ptr<int> counter;
  };
  {
    TimingWheel<std::unique_ptr<Tracked>> wheel(0);
    std::vector<TimerId> ids;
    // Enough inserts to make the slab reallocate several times.
    for (int i = 0; i < 1000; ++i) {
      ids.push_back(wheel.Insert(10 + i, std::make_unique<Tracked>(alive)));
    }
    EXPECT_EQ(*alive, 1000);
    for (int i = 0; i < 1000; i += 2) EXPECT_TRUE(wheel.Cancel(ids[i]));
    EXPECT_EQ(*alive, 500);
    int fired = 0;
    wheel.Advance(259, [&](std::unique_ptr<Tracked>&& p) {
      EXPECT_NE(p, nullptr);
      ++fired;
    });
    EXPECT_EQ(fired, 125);
    EXPECT_EQ(*alive, 375);
  }
  EXPECT_EQ(*alive, 0) << "pending values destroyed with the wheel";
}

TEST(TimingWheelTest, StringValuesSurviveSlabGrowth) {
  TimingWheel<std::string> wheel(0);
  for (int i = 0; i < 300; ++i) {
    wheel.Insert(1 + i, "timer number " + std::to_string(i));
  }
  const std::vector<std::string> fired = AdvanceTo(wheel, 300);
  ASSERT_EQ(fired.size(), 300u);
  EXPECT_EQ(fired[0], "timer number 0");
  EXPECT_EQ(fired[299], "timer number 299");
}

TEST(TimingWheelTest, SlabIsReusedWithoutGrowing) {
  TimingWheel<int> wheel(0);
  std::vector<TimerId> ids;
  for (int i = 0; i < 10'000; ++i) ids.push_back(wheel.Insert(1 + i * 37, i));
  const size_t warm = wheel.MemoryUsage();
  EXPECT_GT(warm, 10'000 * sizeof(int));
  // Cancel and re-insert everything: the freed entries are reused.
  for (TimerId& id : ids) {
    EXPECT_TRUE(wheel.Cancel(id));
    id = wheel.Insert(1 + (id.index * 7919) % 1'000'000, 0);
  }
  EXPECT_EQ(wheel.MemoryUsage(), warm);
  // Fire everything and fill up again.
  EXPECT_EQ(AdvanceTo(wheel, 1'000'000).size(), ids.size());
  for (int i = 0; i < 10'000; ++i) wheel.Insert(wheel.now() + i, i);
  EXPECT_EQ(wheel.size(), ids.size());
  EXPECT_EQ(wheel.MemoryUsage(), warm);
}

TEST(TimingWheelTest, MoveConstructedWheelKeepsTimers) {
  TimingWheel<int> a(0);
  a.Insert(10, 1);
  a.Insert(100'000, 2);
  TimingWheel<int> b(std::move(a));
  EXPECT_EQ(b.size(), 2u);
  // The moved-from wheel is empty and still usable.
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.NextExpiration(), std::nullopt);
  EXPECT_TRUE(a.CheckInvariants());
  a.Insert(20, 9);
  EXPECT_THAT(AdvanceTo(a, 20), ElementsAre(9));
  EXPECT_THAT(AdvanceTo(b, 100'000), ElementsAre(1, 2));
  TimingWheel<int> c(0);
  c.Insert(5, 3);
  c = std::move(b);
  EXPECT_TRUE(c.empty());
  b.Insert(b.now() + 1, 4);
  c = std::move(b);
  EXPECT_EQ(c.size(), 1u);
  EXPECT_THAT(AdvanceTo(c, c.now() + 1), ElementsAre(4));
}

}  // namespace
}  // namespace delayq
