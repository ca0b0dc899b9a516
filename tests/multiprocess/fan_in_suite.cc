// Copyright delayq authors.
//
// A fan-in across processes: the children of one parent are reserved and
// acknowledged by many threads of several processes at once, and the
// parent, waiting for all of them, becomes ready exactly once, round after
// round. The parent is taken by a scheduler in a worker process that looks
// at the store on its own only once an hour, so only the store's news of
// the last child's ack can bring it in time.

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/multiprocess/multiprocess_suite.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

constexpr int kWorkers = 3;
constexpr int kDrainThreads = 4;
constexpr int kChildren = 24;
constexpr int kRounds = 20;
constexpr absl::Duration kPatience = absl::Seconds(60);

// How many lines of `workers` start with `prefix`.
int CountStartingWith(const std::vector<WorkerProcess*>& workers,
                      const std::string& prefix) {
  int n = 0;
  for (const WorkerProcess* w : workers) {
    for (const std::string& line : w->lines()) {
      if (absl::StartsWith(line, prefix)) ++n;
    }
  }
  return n;
}

// The flow of round `round`: kChildren ready children on "kids", and a
// parent on "parents" that waits for all of them.
std::vector<NewJob> FanIn(int round) {
  std::vector<NewJob> jobs;
  NewJob parent;
  parent.id = absl::StrCat("parent-", round);
  parent.topic = "parents";
  for (int i = 0; i < kChildren; ++i) {
    NewJob child;
    child.id = absl::StrCat("kid-", round, "-", i);
    child.topic = "kids";
    parent.after.push_back(child.id);
    jobs.push_back(std::move(child));
  }
  jobs.push_back(std::move(parent));
  return jobs;
}

// Instantiated by the stores whose jobs may wait for each other across
// this case's ids (not, for one, a namespace split over shards).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FanInTest);

TEST_P(FanInTest, ChildrenAckedAtOnceInSeveralProcessesReleaseTheParentOnce) {
  std::vector<std::unique_ptr<WorkerProcess>> owned;
  std::vector<WorkerProcess*> workers;
  for (int w = 0; w < kWorkers; ++w) {
    owned.push_back(StartWorker());
    ASSERT_NE(owned.back(), nullptr);
    workers.push_back(owned.back().get());
    // A thread that waits for parents; it acks each one it gets.
    ASSERT_OK(workers.back()->Run("reserve parents"));
  }
  std::unique_ptr<Backend> store = OpenStore();
  ASSERT_NE(store, nullptr);

  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    ASSERT_OK(store->Add(FanIn(round), absl::Now()));
    for (WorkerProcess* w : workers) {
      ASSERT_TRUE(w->Send(absl::StrCat("drain ", kDrainThreads, " kids")));
    }
    for (WorkerProcess* w : workers) {
      ASSERT_TRUE(w->NextStartingWith("ok drain", kPatience).has_value())
          << "a worker did not finish its drain";
    }
    EXPECT_EQ(
        CountStartingWith(workers, absl::StrCat("acked kid-", round, "-")),
        kChildren);
    // The parent, once, whichever process's waiting thread took it.
    const std::string got_parent = absl::StrCat("got parent-", round, " ");
    ASSERT_TRUE(CollectUntil(
        workers, [&] { return CountStartingWith(workers, got_parent) >= 1; },
        kPatience))
        << "no process got parent-" << round;
  }
  // Anything said twice has had time to arrive.
  for (WorkerProcess* w : workers) w->ReadFor(absl::Milliseconds(500));
  for (int round = 0; round < kRounds; ++round) {
    EXPECT_EQ(
        CountStartingWith(workers, absl::StrCat("got parent-", round, " ")), 1)
        << "parent-" << round;
  }
  for (WorkerProcess* w : workers) EXPECT_TRUE(Errors(*w).empty());
  ASSERT_OK_AND_ASSIGN(TopicStats kids, store->Stats("kids"));
  EXPECT_EQ(kids.ready + kids.reserved + kids.waiting, 0);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
