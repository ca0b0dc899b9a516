// Copyright delayq authors.

#include "delayq/clock.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace delayq {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'000'000);

TEST(SimulatedClockTest, StandsStillUntilMoved) {
  SimulatedClock clock(kStart);
  EXPECT_EQ(clock.Now(), kStart);
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(clock.Now(), kStart + absl::Seconds(5));
  clock.Set(kStart + absl::Seconds(7));
  EXPECT_EQ(clock.Now(), kStart + absl::Seconds(7));
}

TEST(SimulatedClockTest, NeverRunsBackwards) {
  SimulatedClock clock(kStart);
  clock.Advance(-absl::Seconds(1));
  clock.Set(kStart - absl::Seconds(1));
  EXPECT_EQ(clock.Now(), kStart);
}

TEST(SimulatedClockTest, PastDeadlineReturnsAtOnce) {
  SimulatedClock clock(kStart);
  absl::Mutex mu;
  bool flag = false;
  absl::MutexLock lock(&mu);
  EXPECT_FALSE(clock.AwaitWithDeadline(&mu, absl::Condition(&flag), kStart));
}

TEST(SimulatedClockTest, AdvanceWakesWaiterAtItsDeadline) {
  SimulatedClock clock(kStart);
  absl::Mutex mu;
  bool flag = false;
  bool returned = false;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    EXPECT_FALSE(clock.AwaitWithDeadline(&mu, absl::Condition(&flag),
                                         kStart + absl::Seconds(10)));
    returned = true;
  });
  while (clock.Waiters() == 0) absl::SleepFor(absl::Milliseconds(1));
  clock.Advance(absl::Seconds(9));
  // Waking is synchronous: a waiter woken too early would be gone by now.
  EXPECT_EQ(clock.Waiters(), 1);
  clock.Advance(absl::Seconds(1));
  waiter.join();
  EXPECT_TRUE(returned);
  EXPECT_EQ(clock.Waiters(), 0);
}

TEST(SimulatedClockTest, ConditionWakesWaiterBeforeDeadline) {
  SimulatedClock clock(kStart);
  absl::Mutex mu;
  bool flag = false;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(clock.AwaitWithDeadline(&mu, absl::Condition(&flag),
                                        absl::InfiniteFuture()));
  });
  while (clock.Waiters() == 0) absl::SleepFor(absl::Milliseconds(1));
  {
    absl::MutexLock lock(&mu);
    flag = true;
  }
  waiter.join();
  EXPECT_EQ(clock.Waiters(), 0);
}

TEST(SimulatedClockTest, ManyWaitersRacingWithAdvances) {
  SimulatedClock clock(kStart);
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&clock, i] {
      absl::Mutex mu;
      bool never = false;
      for (int round = 0; round < 50; ++round) {
        absl::MutexLock lock(&mu);
        clock.AwaitWithDeadline(&mu, absl::Condition(&never),
                                clock.Now() + absl::Milliseconds(1 + i));
      }
    });
  }
  std::atomic<bool> done{false};
  std::thread mover([&] {
    while (!done) clock.Advance(absl::Milliseconds(1));
  });
  for (auto& t : threads) t.join();
  done = true;
  mover.join();
  EXPECT_EQ(clock.Waiters(), 0);
}

TEST(RealClockTest, SleepUntilWaitsForTheDeadline) {
  Clock& clock = RealClock();
  const absl::Time deadline = clock.Now() + absl::Milliseconds(20);
  clock.SleepUntil(deadline);
  EXPECT_GE(clock.Now(), deadline);
}

}  // namespace
}  // namespace delayq
