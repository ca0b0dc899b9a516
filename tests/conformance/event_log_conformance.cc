// Copyright delayq authors.
//
// Conformance tests of the event log (delayq/event_log.h,
// Backend::AppendEvents(), Backend::JobEvents()): what one process appends
// every process reads back, per job, in order, with every field. The bound
// (EventLogOptions::max_events) is each store's own test, since it needs
// a store opened with a small one. See backend_conformance.h.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

LoggedEvent Logged(EventType type, absl::string_view id, absl::Time at,
                   int attempts = 0, absl::string_view error = "",
                   absl::string_view who = "host-a:17") {
  LoggedEvent e;
  e.type = type;
  e.id = std::string(id);
  e.topic = "log.topic";
  e.at = at;
  e.attempts = attempts;
  e.error = std::string(error);
  e.who = std::string(who);
  return e;
}

std::vector<EventType> Types(const std::vector<LoggedEvent>& events) {
  std::vector<EventType> types;
  for (const LoggedEvent& e : events) types.push_back(e.type);
  return types;
}

TEST_P(BackendConformanceTest, TheEventLogGivesAJobsEventsBackInOrder) {
  const std::string id = absl::StrCat(Topic(), "-job");
  const std::string other = absl::StrCat(Topic(), "-other");
  ASSERT_OK(backend_->AppendEvents(
      {Logged(EventType::kEnqueued, id, kT0, 0, "", "producer:1"),
       Logged(EventType::kEnqueued, other, kT0)}));
  ASSERT_OK(backend_->AppendEvents(
      {Logged(EventType::kReserved, id, At(absl::Seconds(1)), 1, "",
              "worker:2"),
       Logged(EventType::kFailed, id, At(absl::Seconds(2)), 1,
              "timeout: \"upstream\" \xc3\xa9", "worker:2"),
       Logged(EventType::kRetried, id, At(absl::Seconds(2)), 1, "",
              "worker:2")}));

  ASSERT_OK_AND_ASSIGN(std::vector<LoggedEvent> events,
                       backend_->JobEvents(id, 100));
  EXPECT_THAT(Types(events),
              ElementsAre(EventType::kEnqueued, EventType::kReserved,
                          EventType::kFailed, EventType::kRetried));
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].who, "producer:1");
  EXPECT_EQ(events[0].at, kT0);
  const LoggedEvent& failed = events[2];
  EXPECT_EQ(failed.id, id);
  EXPECT_EQ(failed.topic, "log.topic");
  EXPECT_EQ(failed.at, At(absl::Seconds(2)));
  EXPECT_EQ(failed.attempts, 1);
  EXPECT_EQ(failed.error, "timeout: \"upstream\" \xc3\xa9");
  EXPECT_EQ(failed.who, "worker:2");

  ASSERT_OK_AND_ASSIGN(std::vector<LoggedEvent> others,
                       backend_->JobEvents(other, 100));
  EXPECT_THAT(Types(others), ElementsAre(EventType::kEnqueued));
}

TEST_P(BackendConformanceTest, TheEventLogGivesTheNewestEventsUpToTheLimit) {
  const std::string id = absl::StrCat(Topic(), "-many");
  std::vector<LoggedEvent> batch;
  for (int i = 0; i < 10; ++i) {
    batch.push_back(
        Logged(EventType::kExpired, id, At(absl::Seconds(i)), /*attempts=*/i));
  }
  ASSERT_OK(backend_->AppendEvents(batch));
  ASSERT_OK_AND_ASSIGN(std::vector<LoggedEvent> last3,
                       backend_->JobEvents(id, 3));
  ASSERT_EQ(last3.size(), 3u);
  EXPECT_EQ(last3[0].attempts, 7);
  EXPECT_EQ(last3[2].attempts, 9);
}

TEST_P(BackendConformanceTest, TheEventLogFindsAJobAmongManyOthers) {
  // More events than one read of a store that scans its log takes at once.
  const std::string id = absl::StrCat(Topic(), "-needle");
  std::vector<LoggedEvent> batch;
  batch.push_back(Logged(EventType::kEnqueued, id, kT0));
  for (int i = 0; i < 3000; ++i) {
    batch.push_back(
        Logged(EventType::kEnqueued, absl::StrCat(Topic(), "-hay-", i), kT0));
  }
  ASSERT_OK(backend_->AppendEvents(batch));
  ASSERT_OK(backend_->AppendEvents(
      {Logged(EventType::kCancelled, id, At(absl::Seconds(1)))}));
  ASSERT_OK_AND_ASSIGN(std::vector<LoggedEvent> events,
                       backend_->JobEvents(id, 100));
  EXPECT_THAT(Types(events),
              ElementsAre(EventType::kEnqueued, EventType::kCancelled));
}

TEST_P(BackendConformanceTest, TheEventLogHasNothingForAnUnknownJob) {
  EXPECT_THAT(backend_->JobEvents(absl::StrCat(Topic(), "-nobody"), 10),
              IsOkAndHolds(IsEmpty()));
  EXPECT_OK(backend_->AppendEvents({}));
}

}  // namespace

void CheckEventLogBound(Backend& backend, int64_t max_events, int64_t slack) {
  const std::string id = "bounded-job";
  for (int round = 0; round < 20; ++round) {
    std::vector<LoggedEvent> batch;
    for (int64_t i = 0; i < max_events; ++i) {
      batch.push_back(Logged(EventType::kExpired, id, kT0,
                             static_cast<int>(round * max_events + i)));
    }
    ASSERT_OK(backend.AppendEvents(batch));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<LoggedEvent> kept,
                       backend.JobEvents(id, 1'000'000));
  EXPECT_GE(static_cast<int64_t>(kept.size()), max_events);
  EXPECT_LE(static_cast<int64_t>(kept.size()), max_events + slack);
  ASSERT_FALSE(kept.empty());
  // The newest stay, in order.
  EXPECT_EQ(kept.back().attempts, 20 * max_events - 1);
  for (size_t i = 1; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].attempts, kept[i - 1].attempts + 1);
  }
}

}  // namespace testing
}  // namespace delayq
