// Copyright delayq authors.
//
// TimingWheel with a policy whose timers carry their own key, finer than a
// tick: the order inside a tick, Front(), ForEachInOrder() and Restart().
// Then a randomized run against a reference model (a std::set in key
// order) that takes timers the way the memory store does: look at the
// front, cancel it, cancel any other, list a few. The seed is printed; set
// DELAYQ_WHEEL_SEED to replay one run.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "delayq/timing_wheel.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace delayq {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

// A timer at `at` (a fine time, 1024 to a tick), ordered by `at`, then by
// `seq`; `id` names it in the tests.
struct Timer {
  uint64_t at;
  uint64_t seq;
  int id;
};

constexpr int kFineBits = 10;

struct FineTimers : KeyedTimers<Timer> {
  using Key = std::pair<uint64_t, uint64_t>;
  static Key KeyOf(const Timer& t) { return {t.at, t.seq}; }
  static uint64_t TickOf(const Key& key) { return key.first >> kFineBits; }
};

using Wheel = TimingWheel<Timer, FineTimers>;

constexpr uint64_t kTick = uint64_t{1} << kFineBits;

std::vector<int> FireAll(Wheel& wheel, uint64_t now_tick) {
  std::vector<int> ids;
  wheel.Advance(now_tick, [&](Timer&& t) { ids.push_back(t.id); });
  EXPECT_TRUE(wheel.CheckInvariants());
  return ids;
}

std::vector<int> Listed(const Wheel& wheel, size_t limit = SIZE_MAX) {
  std::vector<int> ids;
  wheel.ForEachInOrder([&](const Timer& t) {
    if (ids.size() == limit) return false;
    ids.push_back(t.id);
    return true;
  });
  return ids;
}

// Takes every timer through Front() and Cancel(), as the store does.
std::vector<int> TakeAll(Wheel& wheel, std::map<int, TimerId>& ids) {
  std::vector<int> taken;
  while (const Timer* front = wheel.Front()) {
    taken.push_back(front->id);
    EXPECT_TRUE(wheel.Cancel(ids.at(front->id)));
    EXPECT_TRUE(wheel.CheckInvariants());
  }
  return taken;
}

TEST(KeyedTimersTest, TimersOfOneTickFireInKeyOrder) {
  Wheel wheel(0);
  // All in tick 5, inserted out of order; two share a time.
  wheel.Insert(Timer{5 * kTick + 900, 1, 1});
  wheel.Insert(Timer{5 * kTick + 3, 7, 2});
  wheel.Insert(Timer{5 * kTick + 3, 2, 3});
  wheel.Insert(Timer{5 * kTick + 500, 4, 4});
  EXPECT_THAT(FireAll(wheel, 4), ElementsAre());
  EXPECT_THAT(FireAll(wheel, 5), ElementsAre(3, 2, 4, 1));
}

TEST(KeyedTimersTest, EqualKeysKeepInsertionOrder) {
  Wheel wheel(0);
  for (int id = 0; id < 5; ++id) wheel.Insert(Timer{3000 * kTick, 9, id});
  EXPECT_THAT(Listed(wheel), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_THAT(FireAll(wheel, 3000), ElementsAre(0, 1, 2, 3, 4));
}

TEST(KeyedTimersTest, FrontIsTheEarliestWhateverTheInsertOrder) {
  Wheel wheel(0);
  std::map<int, TimerId> ids;
  ids[1] = wheel.Insert(Timer{100'000 * kTick, 1, 1});
  ids[2] = wheel.Insert(Timer{3 * kTick + 7, 2, 2});
  ids[3] = wheel.Insert(Timer{7 * 4096 * kTick + 5, 3, 3});
  ids[4] = wheel.Insert(Timer{3 * kTick + 6, 4, 4});
  ASSERT_NE(wheel.Front(), nullptr);
  EXPECT_EQ(wheel.Front()->id, 4);
  EXPECT_EQ(wheel.now(), 0u) << "looking at the front moves no time";
  EXPECT_THAT(TakeAll(wheel, ids), ElementsAre(4, 2, 3, 1));
  EXPECT_TRUE(wheel.empty());
}

TEST(KeyedTimersTest, FrontMovesTimeToTheNextTimerOnly) {
  Wheel wheel(0);
  std::map<int, TimerId> ids;
  ids[1] = wheel.Insert(Timer{10 * kTick, 1, 1});
  ids[2] = wheel.Insert(Timer{5000 * kTick + 17, 2, 2});
  ASSERT_EQ(wheel.Front()->id, 1);
  ASSERT_TRUE(wheel.Cancel(ids[1]));
  // Finding the next moves the wheel to its tick, not past it.
  ASSERT_EQ(wheel.Front()->id, 2);
  EXPECT_EQ(wheel.now(), 5000u);
  EXPECT_TRUE(wheel.CheckInvariants());
  // Nothing fires before its deadline, whatever the wheel's time.
  EXPECT_THAT(FireAll(wheel, 4999), ElementsAre());
  EXPECT_EQ(wheel.NextExpiration(), 5000u);
  EXPECT_THAT(FireAll(wheel, 5000), ElementsAre(2));
}

TEST(KeyedTimersTest, EarlierTimersInsertedAfterTheTimeRanAheadComeFirst) {
  Wheel wheel(0);
  std::map<int, TimerId> ids;
  ids[1] = wheel.Insert(Timer{5 * kTick, 1, 1});
  ids[2] = wheel.Insert(Timer{9000 * kTick, 2, 2});
  ASSERT_TRUE(wheel.Cancel(ids[1]));
  ASSERT_EQ(wheel.Front()->id, 2);
  ASSERT_EQ(wheel.now(), 9000u);
  // Before the wheel's time, in its tick, and after it.
  ids[3] = wheel.Insert(Timer{8000 * kTick, 3, 3});
  ids[4] = wheel.Insert(Timer{9000 * kTick + 1, 4, 4});
  ids[5] = wheel.Insert(Timer{20 * kTick, 5, 5});
  ids[6] = wheel.Insert(Timer{9001 * kTick, 6, 6});
  EXPECT_TRUE(wheel.CheckInvariants());
  EXPECT_THAT(Listed(wheel), ElementsAre(5, 3, 2, 4, 6));
  EXPECT_THAT(TakeAll(wheel, ids), ElementsAre(5, 3, 2, 4, 6));
}

TEST(KeyedTimersTest, CancellingAnyTimerOfTheSortedTickKeepsTheOrder) {
  Wheel wheel(0);
  std::map<int, TimerId> ids;
  for (int id = 0; id < 6; ++id) {
    ids[id] = wheel.Insert(Timer{40 * kTick + 100 - 10 * id, 0, id});
  }
  ASSERT_EQ(wheel.Front()->id, 5);  // the tick is sorted now
  ASSERT_TRUE(wheel.Cancel(ids[2]));
  ASSERT_TRUE(wheel.Cancel(ids[5]));
  EXPECT_TRUE(wheel.CheckInvariants());
  EXPECT_THAT(TakeAll(wheel, ids), ElementsAre(4, 3, 1, 0));
}

TEST(KeyedTimersTest, ExtremeTicks) {
  Wheel wheel(1000);
  std::map<int, TimerId> ids;
  ids[1] = wheel.Insert(Timer{UINT64_MAX, 1, 1});  // beyond kMaxTick: capped
  ids[2] = wheel.Insert(Timer{0, 2, 2});           // long overdue
  ids[3] = wheel.Insert(Timer{2000 * kTick, 3, 3});
  EXPECT_THAT(Listed(wheel), ElementsAre(2, 3, 1));
  EXPECT_THAT(TakeAll(wheel, ids), ElementsAre(2, 3, 1));
}

TEST(KeyedTimersTest, ListingStopsWhenAsked) {
  Wheel wheel(0);
  for (int id = 0; id < 1000; ++id) {
    // Spread over every level, inserted latest first.
    wheel.Insert(Timer{
        (uint64_t{1000} - id) * (uint64_t{1} << 40) / 1000 + uint64_t(id) % 3,
        0, 999 - id});
  }
  EXPECT_THAT(Listed(wheel, 4), ElementsAre(0, 1, 2, 3));
  std::vector<int> all = Listed(wheel);
  ASSERT_EQ(all.size(), 1000u);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
}

TEST(KeyedTimersTest, RestartSetsTheTimeOfAnEmptyWheel) {
  Wheel wheel(0);
  std::map<int, TimerId> ids;
  ids[1] = wheel.Insert(Timer{5 * kTick, 1, 1});
  ids[2] = wheel.Insert(Timer{70'000 * kTick, 2, 2});
  ASSERT_TRUE(wheel.Cancel(ids[1]));
  ASSERT_EQ(wheel.Front()->id, 2);
  ASSERT_TRUE(wheel.Cancel(ids[2]));
  EXPECT_EQ(wheel.now(), 70'000u);
  wheel.Restart(50);  // back, while empty
  EXPECT_EQ(wheel.now(), 50u);
  ids[3] = wheel.Insert(Timer{60 * kTick, 3, 3});
  EXPECT_EQ(wheel.NextExpiration(), 60u) << "in a slot again, not overdue";
  EXPECT_THAT(FireAll(wheel, 60), ElementsAre(3));
}

TEST(KeyedTimersTest, DefaultPolicyFrontAndListing) {
  TimingWheel<int> wheel(0);
  const TimerId a = wheel.Insert(500, 1);
  wheel.Insert(20, 2);
  wheel.Insert(20, 3);
  wheel.Insert(70'000, 4);
  std::vector<int> listed;
  wheel.ForEachInOrder([&](const int& v) {
    listed.push_back(v);
    return true;
  });
  EXPECT_THAT(listed, ElementsAre(2, 3, 1, 4));
  EXPECT_EQ(*wheel.Front(), 2);
  EXPECT_TRUE(wheel.Cancel(a));
  std::vector<int> fired;
  wheel.Advance(70'000, [&](int&& v) { fired.push_back(v); });
  EXPECT_THAT(fired, ElementsAre(2, 3, 4));
}

// --- Against the reference model -------------------------------------------

struct Live {
  Timer timer;
  TimerId id;
};
struct ModelOrder {
  bool operator()(const Live& a, const Live& b) const {
    return FineTimers::KeyOf(a.timer) < FineTimers::KeyOf(b.timer);
  }
};

class KeyedModelRun {
 public:
  explicit KeyedModelRun(uint64_t seed)
      : rng_(seed), wheel_(seed % 2 == 0 ? 0 : (uint64_t{7} << 36) - 3) {
    now_ = wheel_.now();
  }

  void Run(int ops) {
    for (int op = 0; op < ops && !::testing::Test::HasFailure(); ++op) {
      const int dice = Uniform(0, 99);
      if (dice < 40 || model_.empty()) {
        Insert();
      } else if (dice < 60) {
        TakeFront();  // what promotion does: the earliest leaves
      } else if (dice < 75) {
        CancelAny();  // a cancel, a replace, an ack
      } else if (dice < 85) {
        AdvanceTo((Uniform(0, 1) == 0 ? now_ : wheel_.now()) +
                  Uniform(0, 3) * Uniform(0, 5000));
      } else if (dice < 95) {
        now_ += Uniform(0, 1) == 0 ? Uniform(0, 70) : Uniform(0, 300'000);
      } else {
        CheckListing();
      }
      Check();
      if (op % 499 == 0) {
        ASSERT_TRUE(wheel_.CheckInvariants()) << "op " << op;
      }
    }
    while (!model_.empty() && !::testing::Test::HasFailure()) TakeFront();
    EXPECT_TRUE(wheel_.empty());
    EXPECT_TRUE(wheel_.CheckInvariants());
  }

 private:
  uint64_t Uniform(uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
  }

  // Fine times near the moving now (often in its tick), at a few shared
  // instants (ties), before it (late) and far after it (and beyond the
  // wheel's span).
  uint64_t DrawAt() {
    const uint64_t now = now_ << kFineBits;
    switch (Uniform(0, 6)) {
      case 0:
        return now + Uniform(0, 2 * kTick);
      case 1:
        return now + Uniform(0, 4) * 777;
      case 2:
        return now - std::min(now, Uniform(0, 300 * kTick));
      case 3:
        return now + Uniform(0, 5000 * kTick);
      case 4:
        return now + Uniform(0, uint64_t{1} << 30) * kTick / 64;
      case 5:
        return now + Uniform(0, uint64_t{1} << 37) * kTick;
      default:
        return now + Uniform(0, 64) * kTick;
    }
  }

  void Insert() {
    Timer t{DrawAt(), Uniform(0, 3), next_id_++};
    // Past the cap, keys still order but ticks saturate: keep keys below it.
    t.at = std::min(t.at, (Wheel::kMaxTick << kFineBits) - 1);
    model_.insert(Live{t, wheel_.Insert(t)});
  }

  void TakeFront() {
    const Timer* front = wheel_.Front();
    ASSERT_NE(front, nullptr);
    const Live first = *model_.begin();
    ASSERT_EQ(front->id, first.timer.id);
    ASSERT_TRUE(wheel_.Cancel(first.id));
    model_.erase(model_.begin());
  }

  void CancelAny() {
    auto it = std::next(model_.begin(), Uniform(0, model_.size() - 1));
    ASSERT_TRUE(wheel_.Cancel(it->id));
    stale_.push_back(it->id);
    model_.erase(it);
    // A stale id cancels nothing.
    ASSERT_FALSE(wheel_.Cancel(stale_[Uniform(0, stale_.size() - 1)]));
  }

  // Fires what is due at `tick`; nothing when Front() moved the wheel's
  // time past it (an earlier Advance() is a no-op).
  void AdvanceTo(uint64_t tick) {
    std::vector<int> fired;
    const bool earlier = tick < wheel_.now();
    wheel_.Advance(tick, [&](Timer&& t) { fired.push_back(t.id); });
    std::vector<int> want;
    while (!earlier && !model_.empty() &&
           FineTimers::TickOf(FineTimers::KeyOf(model_.begin()->timer)) <=
               tick) {
      want.push_back(model_.begin()->timer.id);
      model_.erase(model_.begin());
    }
    ASSERT_THAT(fired, ElementsAreArray(want)) << "advance to " << tick;
    now_ = std::max(now_, tick);
  }

  void CheckListing() {
    std::vector<int> want;
    for (const Live& l : model_) want.push_back(l.timer.id);
    ASSERT_THAT(Listed(wheel_), ElementsAreArray(want));
    const size_t limit = Uniform(0, 5);
    want.resize(std::min(want.size(), limit));
    ASSERT_THAT(Listed(wheel_, limit), ElementsAreArray(want));
  }

  void Check() {
    ASSERT_EQ(wheel_.size(), model_.size());
    if (model_.empty()) {
      ASSERT_EQ(wheel_.Front(), nullptr);
      return;
    }
    ASSERT_EQ(wheel_.Front()->id, model_.begin()->timer.id);
  }

  std::mt19937_64 rng_;
  Wheel wheel_;
  uint64_t now_;
  int next_id_ = 0;
  std::multiset<Live, ModelOrder> model_;
  std::vector<TimerId> stale_;
};

TEST(KeyedTimersPropertyTest, AgreesWithASortedSet) {
  uint64_t seed = std::random_device{}();
  if (const char* fixed = std::getenv("DELAYQ_WHEEL_SEED")) {
    seed = std::strtoull(fixed, nullptr, 10);
  }
  std::cout << "DELAYQ_WHEEL_SEED=" << seed << "\n";
  for (int run = 0; run < 20 && !HasFailure(); ++run) {
    KeyedModelRun(seed + run).Run(4000);
  }
}

}  // namespace
}  // namespace delayq
