// Copyright delayq authors.
//
// GroupCommit on its own: who leads, what a group holds, what each caller
// gets back. No database; the Runner records the groups it is given.

#include "backends/sqlite/internal/group_commit.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/common/mutex.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace sqlite_internal {
namespace {

using ::delayq::testing::StatusIs;
using ::testing::ElementsAre;

// A Runner that records each group (its size and the thread that ran it)
// and, while `hold` is set, keeps the group it runs from ending; once told
// to step, it ends its groups one at a time, as the test lets them.
class Recorder {
 public:
  GroupCommit::Runner runner() {
    return [this](absl::Span<GroupCommit::Op* const> ops) { Run(ops); };
  }

  void Hold() {
    internal::MutexLock lock(&mu_);
    hold_ = true;
  }
  void Let() {
    internal::MutexLock lock(&mu_);
    hold_ = false;
    cv_.SignalAll();
  }
  void Step() {
    internal::MutexLock lock(&mu_);
    stepping_ = true;
  }
  void LetOneEnd() {
    internal::MutexLock lock(&mu_);
    ++ends_let_;
    cv_.SignalAll();
  }

  std::vector<size_t> sizes() {
    internal::MutexLock lock(&mu_);
    return sizes_;
  }
  std::vector<std::thread::id> threads() {
    internal::MutexLock lock(&mu_);
    return threads_;
  }

 private:
  void Run(absl::Span<GroupCommit::Op* const> ops) {
    internal::MutexLock lock(&mu_);
    sizes_.push_back(ops.size());
    threads_.push_back(std::this_thread::get_id());
    const size_t nth = sizes_.size();
    for (GroupCommit::Op* op : ops) op->result = op->body();
    while (hold_ || (stepping_ && ends_let_ < nth)) cv_.Wait(&mu_);
  }

  internal::Mutex mu_;
  internal::CondVar cv_;
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  bool stepping_ ABSL_GUARDED_BY(mu_) = false;
  size_t ends_let_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<size_t> sizes_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread::id> threads_ ABSL_GUARDED_BY(mu_);
};

// Waits until `group` has a running group and `queued` callers waiting.
void AwaitState(GroupCommit& group, bool leading, size_t queued) {
  for (;;) {
    const GroupCommit::State s = group.StateForTest();
    if (s.leading == leading && s.queued == queued) return;
    std::this_thread::yield();
  }
}

TEST(GroupCommitTest, LoneCallerRunsAtOnceOnItsOwnThread) {
  Recorder recorder;
  GroupCommit group(recorder.runner());
  bool ran = false;
  // The body runs inside Run(), on this thread, before Run() returns: no
  // timer or other thread is involved in a lone call.
  EXPECT_OK(group.Run([&] {
    ran = true;
    const GroupCommit::State s = group.StateForTest();
    EXPECT_TRUE(s.leading);
    EXPECT_EQ(s.queued, 0u);
    return absl::OkStatus();
  }));
  EXPECT_TRUE(ran);
  EXPECT_THAT(recorder.sizes(), ElementsAre(1u));
  EXPECT_THAT(recorder.threads(), ElementsAre(std::this_thread::get_id()));
  const GroupCommit::State s = group.StateForTest();
  EXPECT_FALSE(s.leading);
  EXPECT_EQ(s.groups, 1);
  EXPECT_EQ(s.ops, 1);
}

TEST(GroupCommitTest, CallersThatArriveDuringAGroupShareTheNext) {
  constexpr int kLate = 7;
  Recorder recorder;
  GroupCommit group(recorder.runner());
  recorder.Hold();
  std::thread first(
      [&] { EXPECT_OK(group.Run([] { return absl::OkStatus(); })); });
  AwaitState(group, /*leading=*/true, /*queued=*/0);
  // Each late caller's body returns its own status; every third fails.
  std::vector<absl::Status> got(kLate);
  std::vector<std::thread::id> ids(kLate);
  std::vector<std::thread> late;
  for (int i = 0; i < kLate; ++i) {
    late.emplace_back([&, i] {
      ids[i] = std::this_thread::get_id();
      got[i] = group.Run([i] {
        return i % 3 == 0 ? absl::NotFoundError(absl::StrCat("op ", i))
                          : absl::OkStatus();
      });
    });
  }
  AwaitState(group, /*leading=*/true, /*queued=*/kLate);
  const std::thread::id first_id = first.get_id();
  recorder.Let();
  first.join();
  for (std::thread& t : late) t.join();

  EXPECT_THAT(recorder.sizes(), ElementsAre(1u, static_cast<size_t>(kLate)));
  for (int i = 0; i < kLate; ++i) {
    if (i % 3 == 0) {
      EXPECT_THAT(got[i], StatusIs(absl::StatusCode::kNotFound));
      EXPECT_EQ(got[i].message(), absl::StrCat("op ", i));
    } else {
      EXPECT_OK(got[i]);
    }
  }
  // The first caller's thread led their group too.
  EXPECT_THAT(recorder.threads(), ElementsAre(first_id, first_id));
  EXPECT_EQ(group.StateForTest().ops, 1 + kLate);
}

// Longer than a waiter polls: a caller waiting this long sleeps on its
// word, so that waking it takes the futex's path.
absl::Duration PastPolling() {
  return 10 * absl::FromChrono(GroupCommit::kSpin);
}

TEST(GroupCommitTest, ALeaderRunsTheGroupsQueuedBehindItThenHandsOn) {
  constexpr int kLed = GroupCommit::kGroupsPerLead;
  Recorder recorder;
  recorder.Step();
  GroupCommit group(recorder.runner());
  auto call = [&] { EXPECT_OK(group.Run([] { return absl::OkStatus(); })); };
  std::vector<std::thread> callers;
  std::vector<std::thread::id> ids;
  callers.emplace_back(call);
  ids.push_back(callers.back().get_id());
  AwaitState(group, /*leading=*/true, /*queued=*/0);
  // Each group ends with one caller queued behind it, who makes the next.
  for (int i = 1; i <= kLed; ++i) {
    callers.emplace_back(call);
    ids.push_back(callers.back().get_id());
    AwaitState(group, /*leading=*/true, /*queued=*/1);
    absl::SleepFor(PastPolling());
    recorder.LetOneEnd();
    AwaitState(group, /*leading=*/true, /*queued=*/0);
    // The caller of the group that just ended returns while the leader
    // runs the next: it is told as soon as its own group ends.
    if (i >= 2) callers[i - 1].join();
  }
  absl::SleepFor(PastPolling());
  recorder.LetOneEnd();
  callers[0].join();
  callers[kLed].join();

  // The first caller led kGroupsPerLead groups; the caller queued behind
  // the last of them led the next.
  std::vector<std::thread::id> want(kLed, ids[0]);
  want.push_back(ids[kLed]);
  EXPECT_EQ(recorder.threads(), want);
  EXPECT_FALSE(group.StateForTest().leading);
}

TEST(GroupCommitTest, ALeaderGathersOnlyForItsFirstGroup) {
  Recorder recorder;
  recorder.Step();
  // Were a later group of the same lead to wait, the test would time out.
  GroupCommit group(recorder.runner(), std::chrono::minutes(10));
  auto call = [&] { EXPECT_OK(group.Run([] { return absl::OkStatus(); })); };
  std::vector<std::thread> callers;
  callers.emplace_back(call);
  AwaitState(group, /*leading=*/true, /*queued=*/0);
  const size_t kMany = GroupCommit::kGatherFrom;
  for (size_t i = 0; i < kMany; ++i) callers.emplace_back(call);
  AwaitState(group, /*leading=*/true, /*queued=*/kMany);
  recorder.LetOneEnd();  // the next group holds kMany callers
  AwaitState(group, /*leading=*/true, /*queued=*/0);
  callers.emplace_back(call);
  AwaitState(group, /*leading=*/true, /*queued=*/1);
  recorder.LetOneEnd();  // the one queued runs without waiting for more
  recorder.LetOneEnd();
  for (std::thread& t : callers) t.join();
  EXPECT_THAT(recorder.sizes(), ElementsAre(1u, kMany, 1u));
}

TEST(GroupCommitTest, RunAllPutsACallersOpsInOneGroupInOrder) {
  Recorder recorder;
  GroupCommit group(recorder.runner());
  recorder.Hold();
  std::thread first(
      [&] { EXPECT_OK(group.Run([] { return absl::OkStatus(); })); });
  AwaitState(group, /*leading=*/true, /*queued=*/0);
  std::vector<int> order;
  std::thread late([&] {
    // Named: an Op refers to its body, which must outlive it.
    auto one = [&] {
      order.push_back(1);
      return absl::NotFoundError("one");
    };
    auto two = [&] {
      order.push_back(2);
      return absl::OkStatus();
    };
    GroupCommit::Op ops[] = {GroupCommit::Op(one), GroupCommit::Op(two)};
    group.RunAll(absl::MakeSpan(ops));
    EXPECT_THAT(ops[0].result, StatusIs(absl::StatusCode::kNotFound));
    EXPECT_OK(ops[1].result);
  });
  AwaitState(group, /*leading=*/true, /*queued=*/1);
  recorder.Let();
  first.join();
  late.join();
  EXPECT_THAT(order, ElementsAre(1, 2));
  EXPECT_THAT(recorder.sizes(), ElementsAre(1u, 2u));
  EXPECT_EQ(group.StateForTest().ops, 3);
}

// Runs a group of one (on a thread of its own, held), then `late` callers
// queued meanwhile as the next group: a group of `late` callers before.
void RunGroupsOfOneAndThen(GroupCommit& group, Recorder& recorder, int late) {
  recorder.Hold();
  std::thread first(
      [&] { EXPECT_OK(group.Run([] { return absl::OkStatus(); })); });
  AwaitState(group, /*leading=*/true, /*queued=*/0);
  std::vector<std::thread> threads;
  for (int i = 0; i < late; ++i) {
    threads.emplace_back(
        [&] { EXPECT_OK(group.Run([] { return absl::OkStatus(); })); });
  }
  AwaitState(group, /*leading=*/true, late);
  recorder.Let();
  first.join();
  for (std::thread& t : threads) t.join();
}

// Waits until a leader is gathering and `queued` callers are waiting.
void AwaitGathering(GroupCommit& group, size_t queued) {
  for (;;) {
    const GroupCommit::State s = group.StateForTest();
    if (s.gathering && s.queued == queued) return;
    std::this_thread::yield();
  }
}

TEST(GroupCommitTest, ALeaderWaitsForTheCallersOfTheGroupBefore) {
  constexpr int kBefore = GroupCommit::kGatherFrom;
  Recorder recorder;
  // Longer than any test: the wait ends when the callers come.
  GroupCommit group(recorder.runner(), std::chrono::minutes(10));
  RunGroupsOfOneAndThen(group, recorder, kBefore);
  // The group before had kBefore callers: this one waits for them all.
  auto call = [&] { EXPECT_OK(group.Run([] { return absl::OkStatus(); })); };
  std::vector<std::thread> callers;
  for (int i = 1; i < kBefore; ++i) {
    callers.emplace_back(call);
    AwaitGathering(group, i);
  }
  call();
  for (std::thread& t : callers) t.join();
  EXPECT_THAT(recorder.sizes(),
              ElementsAre(1u, size_t{kBefore}, size_t{kBefore}));
  EXPECT_FALSE(group.StateForTest().gathering);
}

TEST(GroupCommitTest, ALeaderDoesNotWaitForAGroupOfTwo) {
  Recorder recorder;
  // Were it to wait, the test would time out.
  GroupCommit group(recorder.runner(), std::chrono::minutes(10));
  RunGroupsOfOneAndThen(group, recorder, GroupCommit::kGatherFrom - 1);
  EXPECT_OK(group.Run([] { return absl::OkStatus(); }));
  EXPECT_THAT(recorder.sizes(),
              ElementsAre(1u, size_t{GroupCommit::kGatherFrom - 1}, 1u));
}

TEST(GroupCommitTest, ALeaderWaitsNoLongerThanItsGather) {
  Recorder recorder;
  GroupCommit group(recorder.runner(), std::chrono::milliseconds(1));
  RunGroupsOfOneAndThen(group, recorder, GroupCommit::kGatherFrom);
  // Nobody else comes: it runs alone once the wait is over.
  EXPECT_OK(group.Run([] { return absl::OkStatus(); }));
  EXPECT_THAT(recorder.sizes(),
              ElementsAre(1u, size_t{GroupCommit::kGatherFrom}, 1u));
  EXPECT_FALSE(group.StateForTest().gathering);
}

TEST(GroupCommitTest, ManyThreadsEachGetTheirOwnResult) {
  constexpr int kThreads = 8;
  constexpr int kCalls = 500;
  Recorder recorder;
  GroupCommit group(recorder.runner());
  std::vector<std::thread> threads;
  std::vector<int> wrong(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int c = 0; c < kCalls; ++c) {
        const std::string want = absl::StrCat(t, "/", c);
        absl::Status s = group.Run([&] { return absl::AbortedError(want); });
        if (s.message() != want) ++wrong[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_THAT(wrong, ::testing::Each(0));
  EXPECT_EQ(group.StateForTest().ops, kThreads * kCalls);
  EXPECT_FALSE(group.StateForTest().leading);
}

}  // namespace
}  // namespace sqlite_internal
}  // namespace delayq
