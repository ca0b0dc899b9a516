// Copyright delayq authors.
//
// Metrics on the memory store and a simulated clock: every number it
// exports follows from what the test did, so each is checked exactly.

#include "delayq/metrics.h"

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "delayq/clock.h"
#include "delayq/memory_backend.h"
#include "delayq/scheduler.h"
#include "delayq/version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SchedulerOptions options;
    options.clock = &clock_;
    absl::StatusOr<std::unique_ptr<Scheduler>> scheduler =
        Scheduler::Create(metrics_.Instrument(NewMemoryBackend()), options);
    ASSERT_TRUE(scheduler.ok()) << scheduler.status();
    scheduler_ = *std::move(scheduler);
    metrics_.Attach(*scheduler_);
  }

  Lease MustReserve(absl::string_view topic) {
    absl::StatusOr<std::optional<Lease>> lease = scheduler_->Reserve(topic);
    EXPECT_TRUE(lease.ok() && lease->has_value());
    return lease.ok() && lease->has_value() ? **lease : Lease{};
  }

  SimulatedClock clock_{kStart};
  Metrics metrics_{&clock_};  // outlives the scheduler
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(MetricsTest, GaugesShowTheStoreNow) {
  ASSERT_OK(scheduler_->Enqueue("mail", "a").status());
  ASSERT_OK(scheduler_->Enqueue("mail", "b").status());
  JobOptions later;
  later.delay = absl::Minutes(5);
  ASSERT_OK(scheduler_->Enqueue("mail", "c", later).status());
  ASSERT_OK(scheduler_->Pause("orders"));
  const std::string text = metrics_.PrometheusText();
  EXPECT_THAT(text, HasSubstr("# TYPE delayq_jobs gauge\n"));
  EXPECT_THAT(text,
              HasSubstr("delayq_jobs{topic=\"mail\",state=\"ready\"} 2\n"));
  EXPECT_THAT(text,
              HasSubstr("delayq_jobs{topic=\"mail\",state=\"delayed\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("delayq_jobs{topic=\"mail\",state=\"dead\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("delayq_topic_paused{topic=\"orders\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("delayq_topic_paused{topic=\"mail\"} 0\n"));
}

TEST_F(MetricsTest, CountsEveryKindOfEvent) {
  JobOptions once;
  once.max_attempts = 1;
  ASSERT_OK(scheduler_->Enqueue("t", "ok").status());
  ASSERT_OK(scheduler_->Enqueue("t", "dies", once).status());
  JobOptions twice;
  twice.max_attempts = 2;
  twice.backoff = Backoff::Fixed(absl::Seconds(1));
  ASSERT_OK(scheduler_->Enqueue("t", "retries", twice).status());
  ASSERT_OK_AND_ASSIGN(std::string gone, scheduler_->Enqueue("t", "gone"));
  ASSERT_OK(scheduler_->Cancel(gone));

  ASSERT_OK(scheduler_->Ack(MustReserve("t")));
  ASSERT_OK(scheduler_->Fail(MustReserve("t"), "x"));  // dead
  ASSERT_OK(scheduler_->Fail(MustReserve("t"), "y"));  // retried

  const std::string text = metrics_.PrometheusText();
  const auto count = [&](const char* event, int n) {
    return absl::StrCat("delayq_job_events_total{topic=\"t\",event=\"", event,
                        "\"} ", n, "\n");
  };
  EXPECT_THAT(text, HasSubstr(count("enqueued", 4)));
  EXPECT_THAT(text, HasSubstr(count("reserved", 3)));
  EXPECT_THAT(text, HasSubstr(count("succeeded", 1)));
  EXPECT_THAT(text, HasSubstr(count("failed", 2)));
  EXPECT_THAT(text, HasSubstr(count("dead", 1)));
  EXPECT_THAT(text, HasSubstr(count("retried", 1)));
  EXPECT_THAT(text, HasSubstr(count("cancelled", 1)));
}

TEST_F(MetricsTest, LatenessAndHandlerTimeFollowTheClock) {
  JobOptions delayed;
  delayed.delay = absl::Seconds(10);
  ASSERT_OK(scheduler_->Enqueue("late", "p", delayed).status());
  clock_.Advance(absl::Milliseconds(10'300));  // due 300 ms ago
  const Lease lease = MustReserve("late");
  clock_.Advance(absl::Seconds(2));
  ASSERT_OK(scheduler_->Ack(lease));

  const std::string text = metrics_.PrometheusText();
  const std::string lateness =
      "delayq_delivery_lateness_seconds_bucket{topic=\"late\",le=";
  EXPECT_THAT(text, HasSubstr(lateness + "\"0.25\"} 0\n"));
  EXPECT_THAT(text, HasSubstr(lateness + "\"0.5\"} 1\n"));
  EXPECT_THAT(text, HasSubstr(lateness + "\"+Inf\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("delayq_delivery_lateness_seconds_sum{topic="
                              "\"late\"} 0.3\n"));
  const std::string handler =
      "delayq_handler_seconds_bucket{topic=\"late\",le=";
  EXPECT_THAT(text, HasSubstr(handler + "\"1\"} 0\n"));
  EXPECT_THAT(text, HasSubstr(handler + "\"2.5\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("delayq_handler_seconds_count{topic=\"late\"} 1\n"));
}

// The handler's time runs from the lease's own reserved_at: a batch's
// leases and a failed one are timed; a lease put together by hand, which
// does not say when it began, is not.
TEST_F(MetricsTest, HandlerTimeComesFromTheLease) {
  ASSERT_OK(scheduler_->EnqueueBatch("h", {"a", "b", "c"}).status());
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       scheduler_->ReserveBatch("h", 3));
  ASSERT_EQ(leases.size(), 3u);
  clock_.Advance(absl::Milliseconds(700));
  ASSERT_OK(scheduler_->AckBatch({leases[0]}).status());
  ASSERT_OK(scheduler_->Fail(leases[1], "boom"));
  Lease by_hand = leases[2];
  by_hand.reserved_at = absl::InfinitePast();
  ASSERT_OK(scheduler_->Ack(by_hand));

  const std::string text = metrics_.PrometheusText();
  const std::string handler = "delayq_handler_seconds_bucket{topic=\"h\",le=";
  EXPECT_THAT(text, HasSubstr(handler + "\"0.5\"} 0\n"));
  EXPECT_THAT(text, HasSubstr(handler + "\"1\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("delayq_handler_seconds_count{topic=\"h\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("delayq_handler_seconds_sum{topic=\"h\"} 1.4\n"));
}

TEST_F(MetricsTest, RedeliveryIsNotCountedAsLateness) {
  ASSERT_OK(scheduler_->Enqueue("r", "p").status());
  const Lease first = MustReserve("r");
  ASSERT_OK(scheduler_->Release(first, absl::ZeroDuration()));
  clock_.Advance(absl::Minutes(1));
  ASSERT_OK(scheduler_->Ack(MustReserve("r")));
  // The released job's attempt was given back, so its second reservation
  // is again its first attempt: lateness counts it, from its new due time.
  const std::string text = metrics_.PrometheusText();
  EXPECT_THAT(text, HasSubstr("delayq_delivery_lateness_seconds_count{topic="
                              "\"r\"} 2\n"));
}

TEST_F(MetricsTest, StoreCallsAreTimedAndTheirErrorsCounted) {
  ASSERT_OK(scheduler_->Enqueue("s", "p").status());
  Lease lease = MustReserve("s");
  Lease stale = lease;
  stale.token += 1;
  EXPECT_THAT(scheduler_->Ack(stale),
              testing::StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(scheduler_->Get("nope"),
              testing::StatusIs(absl::StatusCode::kNotFound));
  const std::string text = metrics_.PrometheusText();
  EXPECT_THAT(text, HasSubstr("# TYPE delayq_store_call_seconds histogram\n"));
  EXPECT_THAT(text,
              HasSubstr("delayq_store_call_seconds_count{call=\"add\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("delayq_store_call_seconds_bucket{call=\"add\","
                              "le=\"5e-05\"} 1\n"));
  // A stale lease and an unknown id are the caller's doing: refusals, not
  // store errors.
  EXPECT_THAT(text, HasSubstr("delayq_store_call_refusals_total{call=\"ack\","
                              "code=\"FAILED_PRECONDITION\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("delayq_store_call_refusals_total{call=\"get\","
                              "code=\"NOT_FOUND\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("delayq_store_call_errors_total{")));
  EXPECT_THAT(text, Not(HasSubstr("call=\"add\",code=")));
}

// A store that cannot answer: its calls count as errors.
class UnreachableGets : public BackendWrapper {
 public:
  using BackendWrapper::BackendWrapper;
  absl::StatusOr<Job> Get(absl::string_view id) override {
    return absl::UnavailableError("store down");
  }
};

TEST(MetricsErrorsTest, AStoreThatCannotAnswerCountsAsAnError) {
  Metrics metrics;
  std::unique_ptr<Backend> memory = NewMemoryBackend();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Scheduler> scheduler,
                       Scheduler::Create(metrics.Instrument(
                           std::make_unique<UnreachableGets>(memory.get()))));
  metrics.Attach(*scheduler);
  EXPECT_THAT(scheduler->Get("x"),
              testing::StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(metrics.PrometheusText(),
              HasSubstr("delayq_store_call_errors_total{call=\"get\","
                        "code=\"UNAVAILABLE\"} 1\n"));
}

TEST_F(MetricsTest, WhatAlertsWatch) {
  // A ready job due 90 s ago, a limit and a schedule.
  ASSERT_OK(scheduler_->Enqueue("waiting", "p").status());
  clock_.Advance(absl::Seconds(90));
  TopicLimit limit;
  limit.rate = 50;
  limit.period = absl::Seconds(10);
  limit.concurrency = 4;
  ASSERT_OK(scheduler_->SetLimit("waiting", limit));
  ASSERT_OK(scheduler_->Schedule("nightly", "0 3 * * *", "reports", ""));
  const std::string text = metrics_.PrometheusText();
  EXPECT_THAT(text, HasSubstr("delayq_ready_job_age_seconds{topic=\"waiting\"} "
                              "90\n"));
  EXPECT_THAT(text,
              HasSubstr("delayq_topic_limit_rate{topic=\"waiting\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("delayq_topic_limit_concurrency{topic="
                              "\"waiting\"} 4\n"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat(
                        "delayq_schedule_last_run_timestamp_seconds{schedule="
                        "\"nightly\"} ",
                        absl::ToUnixSeconds(clock_.Now()), "\n")));
  EXPECT_THAT(text, HasSubstr("delayq_schedule_next_run_timestamp_seconds{"
                              "schedule=\"nightly\"} "));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("delayq_build_info{version=\"",
                                           kVersion, "\"} 1\n")));
}

TEST(MetricsRecordTest, RecordCountsEventsWithoutAScheduler) {
  Metrics metrics;
  Event e;
  e.type = EventType::kEnqueued;
  e.topic = "x";
  metrics.Record(e);
  metrics.Record(e);
  EXPECT_THAT(
      metrics.PrometheusText(),
      HasSubstr("delayq_job_events_total{topic=\"x\",event=\"enqueued\"} "
                "2\n"));
}

// The text without the store calls' series, which count calls rather than
// topics.
std::string TopicSeries(const std::string& text) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StrContains(line, "delayq_store_call")) {
      absl::StrAppend(&out, line, "\n");
    }
  }
  return out;
}

// Topics that the store no longer has lose their series once idle, so the
// text goes back to what an empty store's shows; a topic with jobs, a pause
// or a limit keeps them.
TEST_F(MetricsTest, IdleTopicsThatTheStoreNoLongerHasAreForgotten) {
  const std::string empty = metrics_.PrometheusText();
  for (int i = 0; i < 300; ++i) {
    const std::string topic = absl::StrCat("topic-", i);
    ASSERT_OK(scheduler_->Enqueue(topic, "x").status());
    Lease lease = MustReserve(topic);
    clock_.Advance(absl::Milliseconds(5));
    ASSERT_OK(scheduler_->Ack(lease));
  }
  ASSERT_OK(scheduler_->Enqueue("kept", "x").status());
  // Topics with no jobs but a pause or a limit.
  for (const char* topic : {"paused", "limited"}) {
    ASSERT_OK(scheduler_->Enqueue(topic, "x").status());
    ASSERT_OK(scheduler_->Ack(MustReserve(topic)));
  }
  ASSERT_OK(scheduler_->Pause("paused"));
  ASSERT_OK(scheduler_->SetLimit("limited", TopicLimit{10}));
  const std::string busy = metrics_.PrometheusText();
  EXPECT_THAT(busy, HasSubstr("topic=\"topic-299\""));

  // Not idle long enough yet: everything stays.
  clock_.Advance(Metrics::kDefaultTopicIdle - absl::Seconds(1));
  EXPECT_THAT(metrics_.PrometheusText(), HasSubstr("topic=\"topic-299\""));

  // The store counts by the minute, so its series of a topic may stay up to
  // a minute longer than this process's.
  clock_.Advance(absl::Minutes(1) + absl::Seconds(2));
  const std::string idle = metrics_.PrometheusText();
  std::printf(
      "metrics text: empty store %zu bytes, 300 emptied topics %zu "
      "bytes, after %s idle %zu bytes\n",
      empty.size(), busy.size(),
      absl::FormatDuration(Metrics::kDefaultTopicIdle).c_str(), idle.size());
  EXPECT_THAT(idle, Not(HasSubstr("topic-")));
  for (const char* topic : {"kept", "paused", "limited"}) {
    EXPECT_THAT(
        idle, HasSubstr(absl::StrCat("delayq_job_events_total{topic=\"", topic,
                                     "\",event=\"enqueued\"} 1\n")))
        << topic;
  }

  // Once the three are gone too, the text is an empty store's.
  ASSERT_OK(scheduler_->Ack(MustReserve("kept")));
  ASSERT_OK(scheduler_->Resume("paused"));
  ASSERT_OK(scheduler_->ClearLimit("limited"));
  EXPECT_THAT(metrics_.PrometheusText(), HasSubstr("topic=\"kept\""));
  clock_.Advance(Metrics::kDefaultTopicIdle + absl::Minutes(1) +
                 absl::Seconds(1));
  const std::string gone = metrics_.PrometheusText();
  std::printf(
      "metrics text: all topics gone and idle %zu bytes, of which "
      "not store calls %zu (empty store: %zu)\n",
      gone.size(), TopicSeries(gone).size(), TopicSeries(empty).size());
  EXPECT_EQ(TopicSeries(gone), TopicSeries(empty));
}

TEST(MetricsIdleTest, TheIdleTimeIsAnOption) {
  SimulatedClock clock(kStart);
  Metrics metrics(&clock, absl::Minutes(1));
  SchedulerOptions options;
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Scheduler> scheduler,
      Scheduler::Create(metrics.Instrument(NewMemoryBackend()), options));
  metrics.Attach(*scheduler);
  ASSERT_OK_AND_ASSIGN(std::string id, scheduler->Enqueue("t", "x"));
  ASSERT_OK(scheduler->Cancel(id));
  clock.Advance(absl::Seconds(59));
  EXPECT_THAT(metrics.PrometheusText(), HasSubstr("topic=\"t\""));
  clock.Advance(absl::Minutes(1) + absl::Seconds(2));  // see above
  EXPECT_THAT(metrics.PrometheusText(), Not(HasSubstr("topic=\"t\"")));
}

}  // namespace
}  // namespace delayq
