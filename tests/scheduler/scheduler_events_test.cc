// Copyright delayq authors.
//
// Listeners: every transition is told, a batch's events together and in
// order, and listeners may remove themselves or each other.
// On the memory store and a simulated clock: nothing here depends on
// real time, so every test is deterministic.

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "delayq/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/scheduler/scheduler_fixture.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::testing::ElementsAre;

// A batch's events are told together: every listener gets each of them,
// in order.
TEST_F(SchedulerTest, EveryListenerHearsABatchsEventsInOrder) {
  EventLog first, second;
  first.Attach(*scheduler_);
  second.Attach(*scheduler_);
  JobOptions named;
  named.id = "b";
  ASSERT_OK(scheduler_->EnqueueBatch("t", {"x", "y", "z"}, named).status());
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       scheduler_->ReserveBatch("t", 3));
  ASSERT_OK(scheduler_->AckBatch(leases).status());
  const std::vector<std::string> expected = {
      "enqueued:b-0",  "enqueued:b-1",  "enqueued:b-2",
      "reserved:b-0",  "reserved:b-1",  "reserved:b-2",
      "succeeded:b-0", "succeeded:b-1", "succeeded:b-2"};
  EXPECT_EQ(first.Take(), expected);
  EXPECT_EQ(second.Take(), expected);
}

// A dead job retried by hand, one by one or a topic's at once, is told as
// kicked, each by its id, so that its history says who retried it.
TEST_F(SchedulerTest, RetryingDeadJobsByHandIsToldAsKicked) {
  JobOptions once;
  once.max_attempts = 1;
  for (const char* id : {"a", "b", "c"}) {
    once.id = id;
    ASSERT_OK(scheduler_->Enqueue("t", "x", once).status());
    ASSERT_OK(scheduler_->Fail(MustReserve("t"), "boom"));
  }
  EventLog log;
  log.Attach(*scheduler_);
  ASSERT_OK(scheduler_->KickJob("b"));
  ASSERT_OK_AND_ASSIGN(int kicked, scheduler_->Kick("t", 10));
  EXPECT_EQ(kicked, 2);
  EXPECT_THAT(log.Take(), ElementsAre("kicked:b", "kicked:a", "kicked:c"));
}

// A lease says when it was reserved (the reserve's clock reading), keeps
// it through Touch(), and the events that end it (Ack, AckBatch, Fail) tell
// it; a lease put together by hand tells none.
TEST_F(SchedulerTest, ALeaseSaysWhenItBeganAndItsEndingEventsTellIt) {
  std::vector<Event> ends;  // guarded: one thread here
  scheduler_->AddListener([&](const Event& e) {
    if (e.type == EventType::kSucceeded || e.type == EventType::kFailed) {
      ends.push_back(e);
    }
  });
  ASSERT_OK(scheduler_->EnqueueBatch("t", {"a", "b", "c", "d"}).status());
  const absl::Time first = clock_.Now();
  Lease single = MustReserve("t");
  EXPECT_EQ(single.reserved_at, first);
  clock_.Advance(absl::Seconds(3));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> batch,
                       scheduler_->ReserveBatch("t", 2));
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].reserved_at, first + absl::Seconds(3));
  EXPECT_EQ(batch[1].reserved_at, first + absl::Seconds(3));
  clock_.Advance(absl::Seconds(1));
  ASSERT_OK(scheduler_->Touch(single));
  EXPECT_EQ(single.reserved_at, first);

  ASSERT_OK(scheduler_->Ack(single));
  ASSERT_OK(scheduler_->AckBatch({batch[0]}).status());
  ASSERT_OK(scheduler_->Fail(batch[1], "boom"));
  Lease last = MustReserve("t");
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get(last.job.id));
  ASSERT_OK(scheduler_->Ack(Lease{job, last.token, last.deadline}));
  ASSERT_EQ(ends.size(), 4u);
  EXPECT_EQ(ends[0].reserved_at, first);
  EXPECT_EQ(ends[1].reserved_at, first + absl::Seconds(3));
  EXPECT_EQ(ends[2].type, EventType::kFailed);
  EXPECT_EQ(ends[2].reserved_at, first + absl::Seconds(3));
  EXPECT_EQ(ends[3].reserved_at, absl::InfinitePast());
}

// A batch listener is told each call's events in one call; a listener of
// single events that throws on one still hears the rest of the batch.
TEST_F(SchedulerTest, ABatchListenerHearsEachCallsEventsTogether) {
  std::vector<std::vector<std::string>> calls;  // guarded: one thread here
  const int handle =
      scheduler_->AddBatchListener([&](absl::Span<const Event> events) {
        std::vector<std::string> call;
        for (const Event& e : events) {
          call.push_back(std::string(EventTypeName(e.type)) + ":" + e.id);
        }
        calls.push_back(std::move(call));
      });
  std::vector<std::string> heard;
  scheduler_->AddListener([&](const Event& e) {
    heard.push_back(e.id);
    if (e.id == "b-0") throw std::runtime_error("a listener's own trouble");
  });
  JobOptions named;
  named.id = "b";
  ASSERT_OK(scheduler_->EnqueueBatch("t", {"x", "y"}, named).status());
  named.id = "c";
  ASSERT_OK(scheduler_->Enqueue("t", "z", named).status());
  EXPECT_THAT(calls, ElementsAre(ElementsAre("enqueued:b-0", "enqueued:b-1"),
                                 ElementsAre("enqueued:c")));
  EXPECT_THAT(heard, ElementsAre("b-0", "b-1", "c"));

  scheduler_->RemoveListener(handle);
  ASSERT_OK(scheduler_->EnqueueBatch("t", {"w"}).status());
  EXPECT_EQ(calls.size(), 2u);
}

// A listener that removes itself hears no more, not even the rest of the
// call's events.
TEST_F(SchedulerTest, AListenerThatRemovesItselfHearsNoMoreOfTheBatch) {
  int heard = 0;
  int handle = -1;
  handle = scheduler_->AddListener([&](const Event&) {
    ++heard;
    scheduler_->RemoveListener(handle);
  });
  ASSERT_OK(scheduler_->EnqueueBatch("t", {"x", "y", "z"}).status());
  EXPECT_EQ(heard, 1);
}

// A listener may remove another that was to hear the same event after it:
// that one hears nothing more, and the removal does not wait for itself.
TEST_F(SchedulerTest, AListenerRemovesOneThatWasToHearTheSameEvent) {
  int second_heard = 0;
  int second = -1;
  scheduler_->AddListener(
      [&](const Event&) { scheduler_->RemoveListener(second); });
  second = scheduler_->AddListener([&](const Event&) { ++second_heard; });
  ASSERT_OK(scheduler_->EnqueueBatch("t", {"x", "y"}).status());
  ASSERT_OK(scheduler_->Enqueue("t", "z").status());
  EXPECT_EQ(second_heard, 0);
}

}  // namespace
}  // namespace delayq
