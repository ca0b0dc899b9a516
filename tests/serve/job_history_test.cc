// Copyright delayq authors.
//
// The server's memory of recent jobs' events: a job's events found among
// all others, in order, and only the most recent events of all jobs kept.

#include "tools/serve/api/job_history.h"

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
  e.topic = absl::StrCat("topic-of-", id);
  e.at = absl::FromUnixSeconds(attempts);
  e.attempts = attempts;
  return e;
}

TEST(JobHistoryTest, KeepsAJobsEventsInOrder) {
  JobHistory history(10);
  history.Record(MakeEvent("a", EventType::kEnqueued));
  history.Record(MakeEvent("b", EventType::kEnqueued));
  history.Record(MakeEvent("a", EventType::kReserved, 1));
  Event failed = MakeEvent("a", EventType::kFailed, 1);
  failed.error = "boom";
  history.RecordAll({failed, MakeEvent("b", EventType::kCancelled)});
  const std::vector<Event> a = history.Of("a");
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].type, EventType::kEnqueued);
  EXPECT_EQ(a[1].type, EventType::kReserved);
  EXPECT_EQ(a[1].attempts, 1);
  EXPECT_EQ(a[1].at, absl::FromUnixSeconds(1));
  EXPECT_EQ(a[2].type, EventType::kFailed);
  EXPECT_EQ(a[2].error, "boom");
  for (const Event& e : a) {
    EXPECT_EQ(e.id, "a");
    EXPECT_EQ(e.topic, "topic-of-a");
  }
  const std::vector<Event> b = history.Of("b");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].type, EventType::kCancelled);
  EXPECT_TRUE(b[1].error.empty());
  EXPECT_TRUE(history.Of("c").empty());
}

TEST(JobHistoryTest, KeepsOnlyTheMostRecentEvents) {
  JobHistory history(3);
  history.Record(MakeEvent("a", EventType::kEnqueued));
  history.Record(MakeEvent("b", EventType::kEnqueued));
  history.Record(MakeEvent("a", EventType::kReserved, 1));
  history.Record(MakeEvent("c", EventType::kEnqueued));
  const std::vector<Event> a = history.Of("a");  // its first event is gone
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].type, EventType::kReserved);
  EXPECT_EQ(history.Of("b").size(), 1u);
  EXPECT_EQ(history.Of("c").size(), 1u);
}

// Round and round the ring, with ids, topics and errors short and long
// (kept in the string or on the heap, written over slots that held
// others): the last events are found, oldest first, each its own.
TEST(JobHistoryTest, FindsTheLastEventsAfterManyRoundsOfTheRing) {
  JobHistory history(7);
  auto id = [](int i) {
    return i % 2 ? absl::StrCat("j", i) : absl::StrCat("a-long-job-id-", i);
  };
  for (int i = 0; i < 100; ++i) {
    Event failed = MakeEvent(id(i), EventType::kFailed, i);
    failed.error = i % 3 ? "" : absl::StrCat("a long error message ", i);
    history.RecordAll({MakeEvent(id(i), EventType::kEnqueued, i), failed});
  }
  // 7 events: the failure of job 96, then both events of jobs 97-99.
  for (int i = 0; i < 96; ++i) EXPECT_TRUE(history.Of(id(i)).empty()) << i;
  ASSERT_EQ(history.Of(id(96)).size(), 1u);
  EXPECT_EQ(history.Of(id(96))[0].type, EventType::kFailed);
  EXPECT_EQ(history.Of(id(96))[0].error, "a long error message 96");
  for (int i = 97; i < 100; ++i) {
    const std::vector<Event> events = history.Of(id(i));
    ASSERT_EQ(events.size(), 2u) << i;
    EXPECT_EQ(events[0].id, id(i));
    EXPECT_EQ(events[0].topic, absl::StrCat("topic-of-", id(i)));
    EXPECT_EQ(events[0].type, EventType::kEnqueued);
    EXPECT_EQ(events[1].type, EventType::kFailed);
    EXPECT_EQ(events[1].attempts, i);
    EXPECT_EQ(events[1].error,
              i % 3 ? "" : absl::StrCat("a long error message ", i));
  }
}

TEST(JobHistoryTest, KeepsNothingWhenToldToKeepNoEvents) {
  JobHistory history(0);
  history.Record(MakeEvent("a", EventType::kEnqueued));
  EXPECT_TRUE(history.Of("a").empty());
}

}  // namespace
}  // namespace serve
}  // namespace delayq
