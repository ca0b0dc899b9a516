// Randomized test of TimingWheel against a reference model: a std::multimap
// from deadline to timer, which keeps equal deadlines in insertion order.
//
// Each run performs a long random mix of Insert, Cancel (live and stale ids)
// and Advance (by small steps, to NextExpiration(), and by huge jumps), with
// deadlines near, far, overdue and beyond the wheel's span. After every
// Advance the fired timers must be exactly the model's due timers, in the
// same order, and NextExpiration() must not be later than the model's
// earliest deadline.
//
// The seed is printed; set DELAYQ_WHEEL_SEED to replay one run.

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "delayq/timing_wheel.h"
#include "gtest/gtest.h"

namespace delayq {
namespace {

using internal::kWheelRange;

struct Live {
  TimerId id;
  std::multimap<uint64_t, uint64_t>::iterator model;
};

class WheelModelRun {
 public:
  explicit WheelModelRun(uint64_t seed) : rng_(seed), wheel_(Start(seed)) {}

  // Performs `ops` random operations; stops at the first mismatch.
  void Run(int ops) {
    for (int op = 0; op < ops && !::testing::Test::HasFailure(); ++op) {
      const int dice = Uniform(0, 99);
      if (dice < 50) {
        Insert();
      } else if (dice < 65) {
        CancelLive();
      } else if (dice < 70) {
        CancelStale();
      } else {
        Advance();
      }
      if (op % 997 == 0) {
        ASSERT_TRUE(wheel_.CheckInvariants()) << "op " << op;
      }
    }
    // Drain everything that is left.
    while (!::testing::Test::HasFailure() && !model_.empty()) {
      AdvanceTo(std::max(wheel_.now(), model_.rbegin()->first));
    }
    EXPECT_TRUE(wheel_.empty());
    EXPECT_EQ(wheel_.NextExpiration(), std::nullopt);
    EXPECT_TRUE(wheel_.CheckInvariants());
  }

  int advances() const { return advances_; }
  int fired() const { return fired_; }

 private:
  static uint64_t Start(uint64_t seed) {
    // Start either at zero or somewhere awkward, close below a 2^36 boundary.
    return seed % 2 == 0 ? 0 : 7 * kWheelRange - 1000;
  }

  uint64_t Uniform(uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
  }

  uint64_t RandomDeadline() {
    const uint64_t now = wheel_.now();
    switch (Uniform(0, 9)) {
      case 0:  // Overdue.
        return now - std::min(now, Uniform(0, 200));
      case 1:  // Now, or a popular near tick shared by many timers.
        return Uniform(0, 1) == 0 ? now : (now / 16 + 1) * 16;
      case 2:
      case 3:
        return now + Uniform(1, 64);
      case 4:
      case 5:
        return now + Uniform(1, 5000);
      case 6:
        return now + Uniform(1, 1 << 20);
      case 7:
        return now + Uniform(1, uint64_t{1} << 32);
      case 8:  // Up to a bit beyond the span.
        return now + Uniform(kWheelRange - 1000, kWheelRange + 1000);
      default:  // Far beyond the span.
        return now + Uniform(kWheelRange, uint64_t{1} << 42);
    }
  }

  void Insert() {
    const uint64_t deadline = RandomDeadline();
    const uint64_t value = next_value_++;
    Live live;
    live.id = wheel_.Insert(deadline, value);
    live.model = model_.emplace(deadline, value);
    index_of_[value] = live_.size();
    live_.push_back(live);
    ASSERT_EQ(wheel_.size(), model_.size());
  }

  void CancelLive() {
    if (live_.empty()) return;
    const size_t i = Uniform(0, live_.size() - 1);
    const Live live = live_[i];
    ASSERT_TRUE(wheel_.Cancel(live.id)) << "value " << live.model->second;
    RemoveLive(live.model->second);
    model_.erase(live.model);
    stale_.push_back(live.id);
    ASSERT_EQ(wheel_.size(), model_.size());
  }

  void CancelStale() {
    if (stale_.empty()) return;
    const TimerId id = stale_[Uniform(0, stale_.size() - 1)];
    ASSERT_FALSE(wheel_.Cancel(id));
    ASSERT_EQ(wheel_.size(), model_.size());
  }

  void Advance() {
    const uint64_t now = wheel_.now();
    const std::optional<uint64_t> next = wheel_.NextExpiration();
    switch (Uniform(0, 9)) {
      case 0:
        return AdvanceTo(now);
      case 1:
      case 2:
      case 3:
        return AdvanceTo(now + Uniform(1, 100));
      case 4:
      case 5:
        return AdvanceTo(next.has_value() ? *next : now + 1);
      case 6:
        return AdvanceTo(now + Uniform(1, 100'000));
      case 7:
        return AdvanceTo(now + Uniform(1, uint64_t{1} << 31));
      case 8:
        return AdvanceTo(now + Uniform(1, uint64_t{1} << 37));
      default:
        // Rare huge jumps keep the total far below kMaxTick.
        return AdvanceTo(Uniform(0, 19) == 0
                             ? now + Uniform(1, uint64_t{1} << 44)
                             : now - std::min<uint64_t>(now, 5));
    }
  }

  void AdvanceTo(uint64_t target) {
    ++advances_;
    std::vector<uint64_t> fired;
    const size_t n = wheel_.Advance(
        target, [&](uint64_t&& value) { fired.push_back(value); });
    ASSERT_EQ(n, fired.size());
    std::vector<uint64_t> expected;
    if (target >= now_) {
      now_ = target;
      while (!model_.empty() && model_.begin()->first <= target) {
        expected.push_back(model_.begin()->second);
        RemoveLive(model_.begin()->second);
        model_.erase(model_.begin());
      }
    }
    ASSERT_EQ(fired, expected) << "advance to " << target;
    ASSERT_EQ(wheel_.now(), now_);
    ASSERT_EQ(wheel_.size(), model_.size());
    fired_ += fired.size();
    const std::optional<uint64_t> next = wheel_.NextExpiration();
    if (model_.empty()) {
      ASSERT_EQ(next, std::nullopt);
    } else {
      const uint64_t earliest = std::max(model_.begin()->first, now_);
      ASSERT_TRUE(next.has_value());
      ASSERT_LE(*next, earliest);
      ASSERT_GE(*next, now_);
    }
  }

  void RemoveLive(uint64_t value) {
    const size_t i = index_of_[value];
    index_of_.erase(value);
    if (i + 1 != live_.size()) {
      live_[i] = live_.back();
      index_of_[live_[i].model->second] = i;
    }
    live_.pop_back();
  }

  std::mt19937_64 rng_;
  TimingWheel<uint64_t> wheel_;
  uint64_t now_ = wheel_.now();
  std::multimap<uint64_t, uint64_t> model_;  // deadline -> value
  std::vector<Live> live_;
  std::map<uint64_t, size_t> index_of_;  // value -> position in live_
  std::vector<TimerId> stale_;
  uint64_t next_value_ = 0;
  int advances_ = 0;
  int fired_ = 0;
};

std::vector<uint64_t> Seeds() {
  if (const char* env = std::getenv("DELAYQ_WHEEL_SEED")) {
    return {std::strtoull(env, nullptr, 10)};
  }
  return {1, 2, 20240611};
}

TEST(TimingWheelPropertyTest, MatchesReferenceModel) {
  for (const uint64_t seed : Seeds()) {
    std::cout << "seed " << seed << " (set DELAYQ_WHEEL_SEED=" << seed
              << " to replay)" << std::endl;
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    WheelModelRun run(seed);
    run.Run(150'000);
    std::cout << "  " << run.advances() << " advances, " << run.fired()
              << " timers fired" << std::endl;
  }
}

}  // namespace
}  // namespace delayq
