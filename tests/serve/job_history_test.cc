// Copyright delayq authors.
//
// The server's memory of recent jobs' events: in order, bounded per job
// and in jobs, the oldest job forgotten first.

#include "tools/serve/job_history.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace delayq {
namespace serve {
namespace {

Event MakeEvent(const std::string& id, EventType type, int attempts = 0) {
  Event e;
  e.type = type;
  e.id = id;
  e.topic = "t";
  e.at = absl::FromUnixSeconds(attempts);
  e.attempts = attempts;
  return e;
}

TEST(JobHistoryTest, KeepsAJobsEventsInOrder) {
  JobHistory history(10, 10);
  history.Record(MakeEvent("a", EventType::kEnqueued));
  history.Record(MakeEvent("b", EventType::kEnqueued));
  history.Record(MakeEvent("a", EventType::kReserved, 1));
  history.Record(MakeEvent("a", EventType::kSucceeded, 1));
  const std::vector<Event> a = history.Of("a");
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].type, EventType::kEnqueued);
  EXPECT_EQ(a[1].type, EventType::kReserved);
  EXPECT_EQ(a[2].type, EventType::kSucceeded);
  EXPECT_EQ(history.Of("b").size(), 1u);
  EXPECT_TRUE(history.Of("c").empty());
}

TEST(JobHistoryTest, KeepsTheLastEventsOfAJob) {
  JobHistory history(10, 3);
  for (int i = 1; i <= 5; ++i) {
    history.Record(MakeEvent("a", EventType::kReserved, i));
  }
  const std::vector<Event> a = history.Of("a");
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].attempts, 3);
  EXPECT_EQ(a[2].attempts, 5);
}

TEST(JobHistoryTest, ForgetsTheOldestJobFirst) {
  JobHistory history(2, 10);
  history.Record(MakeEvent("a", EventType::kEnqueued));
  history.Record(MakeEvent("b", EventType::kEnqueued));
  history.Record(MakeEvent("a", EventType::kReserved));  // a is still oldest
  history.Record(MakeEvent("c", EventType::kEnqueued));
  EXPECT_TRUE(history.Of("a").empty());
  EXPECT_EQ(history.Of("b").size(), 1u);
  EXPECT_EQ(history.Of("c").size(), 1u);
}

// Round and round the ring, with ids short and long (kept in the string
// or on the heap): the last jobs are found, each with its own events.
TEST(JobHistoryTest, FindsTheLastJobsAfterManyRoundsOfTheRing) {
  JobHistory history(3, 10);
  auto id = [](int i) {
    return i % 2 ? absl::StrCat("j", i) : absl::StrCat("a-long-job-id-", i);
  };
  for (int i = 0; i < 100; ++i) {
    history.Record(MakeEvent(id(i), EventType::kEnqueued, i));
    history.Record(MakeEvent(id(i), EventType::kReserved, i));
  }
  for (int i = 0; i < 97; ++i) EXPECT_TRUE(history.Of(id(i)).empty()) << i;
  for (int i = 97; i < 100; ++i) {
    const std::vector<Event> events = history.Of(id(i));
    ASSERT_EQ(events.size(), 2u) << i;
    EXPECT_EQ(events[0].id, id(i));
    EXPECT_EQ(events[1].type, EventType::kReserved);
    EXPECT_EQ(events[1].attempts, i);
  }
}

TEST(JobHistoryTest, KeepsNothingWhenToldToKeepNoJobs) {
  JobHistory history(0, 10);
  history.Record(MakeEvent("a", EventType::kEnqueued));
  EXPECT_TRUE(history.Of("a").empty());
}

}  // namespace
}  // namespace serve
}  // namespace delayq
