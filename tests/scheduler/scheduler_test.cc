// Copyright delayq authors.
//
// Scheduler behaviour on the memory backend and a simulated clock: nothing
// here depends on real time, so every test is deterministic.

#include "delayq/scheduler.h"

#include <atomic>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/synchronization/mutex.h"
#include "delayq/memory_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/validation.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::IsOkAndHolds;
using ::delayq::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

JobOptions Delayed(absl::Duration delay) {
  JobOptions options;
  options.delay = delay;
  return options;
}

// Enqueues one job on topic "t" under each id and reserves them all.
std::vector<Lease> EnqueueAndReserve(Scheduler& scheduler,
                                     const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    JobOptions options;
    options.id = id;
    EXPECT_OK(scheduler.Enqueue("t", "p", options));
  }
  absl::StatusOr<std::vector<Lease>> leases =
      scheduler.ReserveBatch("t", static_cast<int>(ids.size()));
  EXPECT_TRUE(leases.ok()) << leases.status();
  EXPECT_EQ(leases.ok() ? leases->size() : 0, ids.size());
  return leases.ok() ? *std::move(leases) : std::vector<Lease>();
}

// Records every event, in order.
class EventLog {
 public:
  void Attach(Scheduler& scheduler) {
    scheduler.AddListener([this](const Event& e) {
      absl::MutexLock lock(&mu_);
      events_.push_back(std::string(EventTypeName(e.type)) + ":" + e.id);
    });
  }
  std::vector<std::string> Take() {
    absl::MutexLock lock(&mu_);
    return std::move(events_);
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> events_;
};

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SchedulerOptions options;
    options.clock = &clock_;
    ASSERT_OK_AND_ASSIGN(scheduler_,
                         Scheduler::Create(NewMemoryBackend(), options));
  }

  Lease MustReserve(absl::string_view topic) {
    absl::StatusOr<std::optional<Lease>> lease = scheduler_->Reserve(topic);
    EXPECT_TRUE(lease.ok()) << lease.status();
    EXPECT_TRUE(lease.ok() && lease->has_value()) << "nothing to reserve";
    return lease.ok() && lease->has_value() ? **lease : Lease{};
  }

  bool NothingReady(absl::string_view topic) {
    absl::StatusOr<std::optional<Lease>> lease = scheduler_->Reserve(topic);
    return lease.ok() && !lease->has_value();
  }

  SimulatedClock clock_{kStart};
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerTest, CreateRejectsBadArguments) {
  EXPECT_THAT(Scheduler::Create(nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument));
  SchedulerOptions options;
  options.tick = absl::ZeroDuration();
  EXPECT_THAT(Scheduler::Create(NewMemoryBackend(), options),
              StatusIs(absl::StatusCode::kInvalidArgument));
  options = SchedulerOptions();
  options.poll_interval = -absl::Seconds(1);
  EXPECT_THAT(Scheduler::Create(NewMemoryBackend(), options),
              StatusIs(absl::StatusCode::kInvalidArgument));
  options = SchedulerOptions();
  options.promote_batch = 0;
  EXPECT_THAT(Scheduler::Create(NewMemoryBackend(), options),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(SchedulerTest, EnqueueValidatesInput) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(scheduler_->Enqueue("", "p"), StatusIs(kInvalid));
  EXPECT_THAT(scheduler_->Enqueue(std::string(201, 'a'), "p"),
              StatusIs(kInvalid));
  EXPECT_OK(scheduler_->Enqueue(std::string(200, 'a'), "p"));
  EXPECT_THAT(scheduler_->Enqueue("has space", "p"), StatusIs(kInvalid));
  EXPECT_THAT(scheduler_->Enqueue("slash/no", "p"), StatusIs(kInvalid));
  EXPECT_OK(scheduler_->Enqueue("Ok.topic_name:v1-2", "p"));

  JobOptions options;
  options.delay = -absl::Seconds(1);
  EXPECT_THAT(scheduler_->Enqueue("t", "p", options), StatusIs(kInvalid));
  options = JobOptions();
  options.ttr = absl::ZeroDuration();
  EXPECT_THAT(scheduler_->Enqueue("t", "p", options), StatusIs(kInvalid));
  options = JobOptions();
  options.max_attempts = 0;
  EXPECT_THAT(scheduler_->Enqueue("t", "p", options), StatusIs(kInvalid));
  options = JobOptions();
  options.id = std::string(201, 'x');
  EXPECT_THAT(scheduler_->Enqueue("t", "p", options), StatusIs(kInvalid));

  EXPECT_THAT(scheduler_->Enqueue("t", std::string((1 << 20) + 1, 'x')),
              StatusIs(kInvalid));
  EXPECT_OK(scheduler_->Enqueue("t", std::string(1 << 20, 'x')));
}

// What a store cannot keep exactly is refused rather than stored otherwise
// (Redis once kept the year 3000 as 2112, and an infinite ttr meant a
// crashed worker's job never came back).
TEST_F(SchedulerTest, EnqueueRefusesTimesNoStoreKeepsExactly) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  auto with = [](auto set) {
    JobOptions options;
    set(options);
    return options;
  };
  auto enqueue = [&](const JobOptions& options) {
    return scheduler_->Enqueue("t", "p", options).status();
  };
  EXPECT_THAT(
      enqueue(with([](JobOptions& o) { o.ttr = absl::InfiniteDuration(); })),
      StatusIs(kInvalid));
  EXPECT_THAT(
      enqueue(with([](JobOptions& o) { o.ttr = absl::Nanoseconds(500); })),
      StatusIs(kInvalid));
  EXPECT_OK(
      enqueue(with([](JobOptions& o) { o.ttr = absl::Microseconds(1); })));
  EXPECT_OK(
      enqueue(with([](JobOptions& o) { o.ttr = internal::kLongestDuration; })));
  EXPECT_THAT(enqueue(with([](JobOptions& o) {
                o.ttr = internal::kLongestDuration + absl::Seconds(1);
              })),
              StatusIs(kInvalid));
  EXPECT_THAT(enqueue(with([](JobOptions& o) {
                o.run_at = absl::FromCivil(absl::CivilSecond(3000, 1, 1),
                                           absl::UTCTimeZone());
              })),
              StatusIs(kInvalid));
  EXPECT_OK(
      enqueue(with([](JobOptions& o) { o.run_at = internal::kLatestRunAt; })));
  EXPECT_THAT(enqueue(with([](JobOptions& o) {
                o.run_at = absl::UnixEpoch() - absl::Seconds(1);
              })),
              StatusIs(kInvalid));
  EXPECT_THAT(
      enqueue(with([](JobOptions& o) { o.run_at = absl::InfiniteFuture(); })),
      StatusIs(kInvalid));
  EXPECT_THAT(
      enqueue(with([](JobOptions& o) { o.delay = absl::InfiniteDuration(); })),
      StatusIs(kInvalid));
  EXPECT_THAT(enqueue(with([](JobOptions& o) {
                o.delay = absl::Hours(24 * 365 * 100);
              })),
              StatusIs(kInvalid))
      << "due after the latest run_at";
  EXPECT_THAT(enqueue(with([](JobOptions& o) {
                o.backoff.base = absl::InfiniteDuration();
              })),
              StatusIs(kInvalid));
  EXPECT_THAT(enqueue(with([](JobOptions& o) {
                o.backoff.max = absl::InfiniteDuration();
              })),
              StatusIs(kInvalid));
  ASSERT_OK(scheduler_->Enqueue("r", "p"));
  Lease lease = MustReserve("r");
  EXPECT_THAT(scheduler_->Release(lease, absl::InfiniteDuration()),
              StatusIs(kInvalid));
  EXPECT_OK(scheduler_->Release(lease, absl::Seconds(1)));
}

// Enqueues six jobs due 1..6 s from now (latest first, or earliest
// first), then checks that a consumer blocked in Reserve() gets each at its
// time. The store is looked at on its own only once an hour, so only the
// timers can wake it.
void ExpectEveryJobOnTime(SimulatedClock& clock, bool earliest_first) {
  SchedulerOptions options;
  options.clock = &clock;
  options.poll_interval = absl::Hours(1);
  ASSERT_OK_AND_ASSIGN(auto capped,
                       Scheduler::Create(NewMemoryBackend(), options));
  constexpr int kJobs = 6;
  for (int n = 1; n <= kJobs; ++n) {
    const int i = earliest_first ? n : kJobs + 1 - n;
    ASSERT_OK(
        capped->Enqueue("t", absl::StrCat("j", i), Delayed(absl::Seconds(i))));
  }
  const absl::Time start = clock.Now();
  for (int i = 1; i <= kJobs; ++i) {
    std::optional<Lease> got;
    std::thread consumer([&] {
      absl::StatusOr<std::optional<Lease>> lease =
          capped->Reserve("t", absl::Hours(1));
      ASSERT_TRUE(lease.ok());
      got = *lease;
    });
    while (clock.Waiters() == 0) absl::SleepFor(absl::Milliseconds(1));
    clock.Advance(absl::Seconds(1));
    consumer.join();
    ASSERT_TRUE(got.has_value()) << "j" << i;
    EXPECT_EQ(got->job.payload, absl::StrCat("j", i));
    EXPECT_EQ(clock.Now(), start + absl::Seconds(i)) << "j" << i;
    ASSERT_OK(capped->Ack(*got));
  }
}

// One timer stands for every pending job, and the store tells the next due
// time each time it fires.
TEST_F(SchedulerTest, EveryJobIsOnTimeWithOneTimerForAll) {
  ExpectEveryJobOnTime(clock_, /*earliest_first=*/false);
}

// Enqueued earliest first: each later deadline finds the local timer armed
// earlier and leaves it as it is (without taking a lock), and each time a
// timer fires the store tells the next due time.
TEST_F(SchedulerTest, LaterDeadlinesThanTheArmedOneAreStillOnTime) {
  ExpectEveryJobOnTime(clock_, /*earliest_first=*/true);
}

// A paused topic's jobs wait; Resume() wakes a consumer blocked on it. The
// store is looked at on its own only once an hour and the clock stands
// still, so only the resume can wake it.
TEST_F(SchedulerTest, APausedTopicWaitsAndResumeWakesItsConsumer) {
  SchedulerOptions options;
  options.clock = &clock_;
  options.poll_interval = absl::Hours(1);
  ASSERT_OK_AND_ASSIGN(auto scheduler,
                       Scheduler::Create(NewMemoryBackend(), options));
  ASSERT_OK(scheduler->Pause("mail"));
  ASSERT_OK(scheduler->Enqueue("mail", "hello"));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> paused,
                       scheduler->PausedTopics());
  EXPECT_THAT(paused, ::testing::ElementsAre("mail"));
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> none, scheduler->Reserve("mail"));
  EXPECT_FALSE(none.has_value());

  std::optional<Lease> got;
  std::thread consumer([&] {
    absl::StatusOr<std::optional<Lease>> lease =
        scheduler->Reserve("mail", absl::Hours(1));
    ASSERT_TRUE(lease.ok());
    got = *lease;
  });
  while (clock_.Waiters() == 0) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_OK(scheduler->Resume("mail"));
  consumer.join();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job.payload, "hello");
  EXPECT_EQ(clock_.Now(), kStart);
  EXPECT_THAT(scheduler->Pause("bad\ntopic"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// Debounce: each hit pushes the respawn back to 90 s after it.
TEST_F(SchedulerTest, ReplaceMovesTheRespawnOnEveryHit) {
  JobOptions options;
  options.id = "boss-7";
  options.delay = absl::Seconds(90);
  options.replace = true;
  ASSERT_OK(scheduler_->Enqueue("boss.respawn", "hit 1", options));
  clock_.Advance(absl::Seconds(30));
  ASSERT_OK(scheduler_->Enqueue("boss.respawn", "hit 2", options));
  clock_.Advance(absl::Seconds(60));  // 90 s after the first hit
  ASSERT_OK(scheduler_->Tick().status());
  EXPECT_TRUE(NothingReady("boss.respawn"));
  clock_.Advance(absl::Seconds(30));  // 90 s after the second
  ASSERT_OK(scheduler_->Tick().status());
  Lease lease = MustReserve("boss.respawn");
  EXPECT_EQ(lease.job.payload, "hit 2");
  // Held by a worker: it cannot be moved, whatever the caller asks.
  EXPECT_THAT(scheduler_->Enqueue("boss.respawn", "hit 3", options),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK(scheduler_->Ack(lease));
  // Gone: replace adds it again.
  ASSERT_OK(scheduler_->Enqueue("boss.respawn", "hit 4", options));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("boss-7"));
  EXPECT_EQ(job.payload, "hit 4");

  JobOptions no_id;
  no_id.replace = true;
  EXPECT_THAT(scheduler_->Enqueue("t", "p", no_id),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(scheduler_->EnqueueBatch("t", {"a", "b"}, options),
              StatusIs(absl::StatusCode::kInvalidArgument));
  // Without replace, a taken id still fails.
  options.replace = false;
  EXPECT_THAT(scheduler_->Enqueue("boss.respawn", "hit 5", options),
              StatusIs(absl::StatusCode::kAlreadyExists));
}

// Ids end up in logs, terminals and a command's environment.
TEST_F(SchedulerTest, IdsWithControlBytesOrTooLongInABatchAreRefused) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  for (const std::string& id :
       {std::string("a\nb"), std::string("a\0b", 3), std::string("\x1b[2J"),
        std::string("del\x7f"), std::string("tab\there")}) {
    JobOptions options;
    options.id = id;
    EXPECT_THAT(scheduler_->Enqueue("t", "p", options), StatusIs(kInvalid))
        << absl::CHexEscape(id);
  }
  JobOptions options;
  options.id = "caf\xc3\xa9-ok";  // UTF-8 is fine
  EXPECT_OK(scheduler_->Enqueue("t", "p", options));
  // A batch's ids are the id plus "-0", "-1", ...: each must fit 200 bytes.
  std::vector<std::string> payloads(11, "p");
  options.id = std::string(198, 'b');
  EXPECT_THAT(scheduler_->EnqueueBatch("t", payloads, options),
              StatusIs(kInvalid));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler_->Stats("t"));
  EXPECT_EQ(stats.total(), 1) << "nothing of the batch was stored";
  payloads.resize(10);
  EXPECT_OK(scheduler_->EnqueueBatch("t", payloads, options));
}

TEST_F(SchedulerTest, PayloadLimitIsConfigurable) {
  SchedulerOptions options;
  options.clock = &clock_;
  options.max_payload_bytes = 4;
  ASSERT_OK_AND_ASSIGN(auto small,
                       Scheduler::Create(NewMemoryBackend(), options));
  EXPECT_OK(small->Enqueue("t", "1234"));
  EXPECT_THAT(small->Enqueue("t", "12345"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(SchedulerTest, LiveIdCannotBeReused) {
  JobOptions options;
  options.id = "order-1";
  ASSERT_OK_AND_ASSIGN(std::string id, scheduler_->Enqueue("t", "p", options));
  EXPECT_EQ(id, "order-1");
  EXPECT_THAT(scheduler_->Enqueue("other", "p", options),
              StatusIs(absl::StatusCode::kAlreadyExists));
  ASSERT_OK(scheduler_->Ack(MustReserve("t")));
  EXPECT_OK(scheduler_->Enqueue("t", "p", options));  // not live any more
}

TEST_F(SchedulerTest, GeneratedIdsAreUnique) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_OK_AND_ASSIGN(std::string id, scheduler_->Enqueue("t", "p"));
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000u);
}

TEST_F(SchedulerTest, ImmediateJobRoundTrip) {
  ASSERT_OK_AND_ASSIGN(std::string id, scheduler_->Enqueue("mail", "hello"));
  Lease lease = MustReserve("mail");
  EXPECT_EQ(lease.job.id, id);
  EXPECT_EQ(lease.job.payload, "hello");
  EXPECT_EQ(lease.job.attempts, 1);
  EXPECT_EQ(lease.deadline, kStart + absl::Seconds(60));
  EXPECT_TRUE(NothingReady("mail"));
  ASSERT_OK(scheduler_->Ack(lease));
  EXPECT_THAT(scheduler_->Get(id), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(SchedulerTest, ReserveSeesDueJobsWithoutTick) {
  ASSERT_OK(scheduler_->Enqueue("t", "later", Delayed(absl::Seconds(30))));
  EXPECT_TRUE(NothingReady("t"));
  clock_.Advance(absl::Seconds(29));
  EXPECT_TRUE(NothingReady("t"));
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(MustReserve("t").job.payload, "later");
}

TEST_F(SchedulerTest, RunAtOverridesDelay) {
  JobOptions options;
  options.delay = absl::Hours(1);
  options.run_at = kStart + absl::Seconds(5);
  ASSERT_OK_AND_ASSIGN(std::string id, scheduler_->Enqueue("t", "p", options));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get(id));
  EXPECT_EQ(job.state, JobState::kDelayed);
  EXPECT_EQ(job.run_at, kStart + absl::Seconds(5));
  options.id = "past";
  options.run_at = kStart - absl::Hours(1);
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  EXPECT_EQ(MustReserve("t").job.id, "past");
}

TEST_F(SchedulerTest, TickPromotesExactlyWhenDue) {
  EventLog log;
  log.Attach(*scheduler_);
  JobOptions options = Delayed(absl::Milliseconds(1500));
  options.id = "a";
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  EXPECT_THAT(log.Take(), ElementsAre("enqueued:a"));

  clock_.Advance(absl::Milliseconds(1499));
  EXPECT_THAT(scheduler_->Tick(), IsOkAndHolds(0));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("a"));
  EXPECT_EQ(job.state, JobState::kDelayed);

  clock_.Advance(absl::Milliseconds(1));
  EXPECT_THAT(scheduler_->Tick(), IsOkAndHolds(1));
  ASSERT_OK_AND_ASSIGN(job, scheduler_->Get("a"));
  EXPECT_EQ(job.state, JobState::kReady);
  EXPECT_THAT(log.Take(), ElementsAre("promoted:a"));
}

TEST_F(SchedulerTest, TickPromotesEverythingDueNotABatch) {
  SchedulerOptions options;
  options.clock = &clock_;
  options.promote_batch = 7;  // much smaller than the backlog
  ASSERT_OK_AND_ASSIGN(auto scheduler,
                       Scheduler::Create(NewMemoryBackend(), options));
  std::vector<std::string> payloads(100, "p");
  ASSERT_OK(scheduler->EnqueueBatch("t", payloads, Delayed(absl::Seconds(1))));
  clock_.Advance(absl::Seconds(1));
  EXPECT_THAT(scheduler->Tick(), IsOkAndHolds(100));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler->Stats("t"));
  EXPECT_EQ(stats.ready, 100);
  EXPECT_EQ(stats.delayed, 0);
}

TEST_F(SchedulerTest, PriorityThenDueTimeThenEnqueueOrder) {
  JobOptions low;
  low.priority = 5;
  JobOptions high;
  high.priority = -1;
  ASSERT_OK_AND_ASSIGN(std::string a, scheduler_->Enqueue("t", "a", low));
  ASSERT_OK_AND_ASSIGN(std::string b, scheduler_->Enqueue("t", "b"));
  ASSERT_OK_AND_ASSIGN(std::string c, scheduler_->Enqueue("t", "c", high));
  ASSERT_OK_AND_ASSIGN(std::string d, scheduler_->Enqueue("t", "d"));
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) order.push_back(MustReserve("t").job.payload);
  EXPECT_THAT(order, ElementsAre("c", "b", "d", "a"));
}

TEST_F(SchedulerTest, StaleLeaseIsFenced) {
  JobOptions options;
  options.id = "j";
  options.ttr = absl::Seconds(10);
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  Lease first = MustReserve("t");
  clock_.Advance(absl::Seconds(10));
  Lease second = MustReserve("t");  // the first lease expired
  EXPECT_NE(first.token, second.token);
  EXPECT_EQ(second.job.attempts, 2);
  const auto kStale = absl::StatusCode::kFailedPrecondition;
  EXPECT_THAT(scheduler_->Ack(first), StatusIs(kStale));
  EXPECT_THAT(scheduler_->Fail(first, "late"), StatusIs(kStale));
  EXPECT_THAT(scheduler_->Release(first, absl::ZeroDuration()),
              StatusIs(kStale));
  EXPECT_THAT(scheduler_->Touch(first), StatusIs(kStale));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("j"));
  EXPECT_EQ(job.state, JobState::kReserved);
  EXPECT_OK(scheduler_->Ack(second));
  EXPECT_THAT(scheduler_->Ack(second), StatusIs(kStale));
}

TEST_F(SchedulerTest, AckBatchTellsOfEachJobItAcked) {
  EventLog log;
  log.Attach(*scheduler_);
  std::vector<Lease> leases = EnqueueAndReserve(*scheduler_, {"a", "b"});
  ASSERT_EQ(leases.size(), 2u);
  log.Take();
  Lease stale = leases[1];
  stale.token += 1000;
  ASSERT_OK_AND_ASSIGN(std::vector<absl::Status> acked,
                       scheduler_->AckBatch({leases[0], stale}));
  ASSERT_EQ(acked.size(), 2u);
  EXPECT_OK(acked[0]);
  EXPECT_THAT(acked[1], StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(log.Take(), ElementsAre("succeeded:" + leases[0].job.id));
  ASSERT_OK_AND_ASSIGN(acked, scheduler_->AckBatch({leases[1]}));
  EXPECT_THAT(acked, ElementsAre(absl::OkStatus()));
  EXPECT_THAT(log.Take(), ElementsAre("succeeded:" + leases[1].job.id));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler_->Stats("t"));
  EXPECT_EQ(stats, TopicStats{});
}

// A store whose ack of one job fails (a lost connection, say), acking a
// batch one lease at a time as Backend::AckBatch() does by default.
class OneAckFails : public BackendWrapper {
 public:
  OneAckFails(std::unique_ptr<Backend> target, std::string failing_id)
      : BackendWrapper(target.get()),
        owned_(std::move(target)),
        failing_id_(std::move(failing_id)) {}
  absl::Status Ack(absl::string_view id, uint64_t token,
                   absl::Time now) override {
    if (id == failing_id_) return absl::UnavailableError("connection lost");
    return BackendWrapper::Ack(id, token, now);
  }
  absl::StatusOr<std::vector<absl::Status>> AckBatch(
      absl::Span<const Lease> leases, absl::Time now) override {
    return Backend::AckBatch(leases, now);
  }

 private:
  std::unique_ptr<Backend> owned_;
  std::string failing_id_;
};

// The default batch ack goes on past a lease whose ack failed, and tells
// of the others.
TEST(SchedulerAckBatchTest, AFailedAckIsItsLeasesAlone) {
  SimulatedClock clock(kStart);
  SchedulerOptions options;
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Scheduler> scheduler,
      Scheduler::Create(std::make_unique<OneAckFails>(NewMemoryBackend(), "b"),
                        options));
  EventLog log;
  log.Attach(*scheduler);
  std::vector<Lease> leases = EnqueueAndReserve(*scheduler, {"a", "b", "c"});
  ASSERT_EQ(leases.size(), 3u);
  log.Take();
  ASSERT_OK_AND_ASSIGN(std::vector<absl::Status> acked,
                       scheduler->AckBatch(leases));
  ASSERT_EQ(acked.size(), 3u);
  std::vector<std::string> succeeded;
  for (size_t i = 0; i < leases.size(); ++i) {
    if (leases[i].job.id == "b") {
      EXPECT_THAT(acked[i], StatusIs(absl::StatusCode::kUnavailable));
    } else {
      EXPECT_OK(acked[i]);
      succeeded.push_back("succeeded:" + leases[i].job.id);
    }
  }
  EXPECT_EQ(log.Take(), succeeded);
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler->Stats("t"));
  EXPECT_EQ(stats.reserved, 1);
}

TEST_F(SchedulerTest, FailRetriesWithBackoffThenDies) {
  EventLog log;
  log.Attach(*scheduler_);
  JobOptions options;
  options.id = "pay";
  options.max_attempts = 3;
  options.backoff = Backoff::Exponential(absl::Seconds(2), absl::Seconds(3));
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));

  ASSERT_OK(scheduler_->Fail(MustReserve("t"), "timeout 1"));
  clock_.Advance(absl::Milliseconds(1999));
  EXPECT_TRUE(NothingReady("t"));  // backoff after attempt 1: 2 s
  clock_.Advance(absl::Milliseconds(1));
  Lease second = MustReserve("t");
  EXPECT_EQ(second.job.attempts, 2);
  EXPECT_EQ(second.job.last_error, "timeout 1");

  ASSERT_OK(scheduler_->Fail(second, "timeout 2"));
  clock_.Advance(absl::Milliseconds(2999));
  EXPECT_TRUE(NothingReady("t"));  // 4 s capped at 3 s
  clock_.Advance(absl::Milliseconds(1));
  ASSERT_OK(scheduler_->Fail(MustReserve("t"), "timeout 3"));

  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("pay"));
  EXPECT_EQ(job.state, JobState::kDead);
  EXPECT_EQ(job.last_error, "timeout 3");
  EXPECT_EQ(job.attempts, 3);
  std::vector<std::string> events = log.Take();
  EXPECT_THAT(events, ::testing::Contains("retried:pay").Times(2));
  EXPECT_THAT(events, ::testing::Contains("dead:pay").Times(1));
  EXPECT_EQ(events.back(), "dead:pay");

  ASSERT_OK_AND_ASSIGN(int kicked, scheduler_->Kick("t", 10));
  EXPECT_EQ(kicked, 1);
  EXPECT_EQ(MustReserve("t").job.attempts, 1);
}

TEST_F(SchedulerTest, ReleaseGivesTheAttemptBack) {
  JobOptions options;
  options.max_attempts = 1;
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  ASSERT_OK(scheduler_->Release(MustReserve("t"), absl::Seconds(5)));
  EXPECT_TRUE(NothingReady("t"));
  clock_.Advance(absl::Seconds(5));
  Lease lease = MustReserve("t");
  EXPECT_EQ(lease.job.attempts, 1);
  EXPECT_THAT(scheduler_->Release(lease, -absl::Seconds(1)),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(SchedulerTest, TouchExtendsTheLease) {
  JobOptions options;
  options.ttr = absl::Seconds(10);
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  Lease lease = MustReserve("t");
  clock_.Advance(absl::Seconds(8));
  ASSERT_OK(scheduler_->Touch(lease));
  EXPECT_EQ(lease.deadline, kStart + absl::Seconds(18));
  clock_.Advance(absl::Seconds(9));
  EXPECT_TRUE(NothingReady("t"));
  EXPECT_OK(scheduler_->Ack(lease));
}

TEST_F(SchedulerTest, ExpiredLeaseIsDeliveredAgainThenDies) {
  EventLog log;
  log.Attach(*scheduler_);
  JobOptions options;
  options.id = "x";
  options.ttr = absl::Seconds(1);
  options.max_attempts = 2;
  ASSERT_OK(scheduler_->Enqueue("t", "p", options));
  MustReserve("t");
  clock_.Advance(absl::Seconds(1));
  EXPECT_THAT(scheduler_->Tick(), IsOkAndHolds(1));
  MustReserve("t");
  clock_.Advance(absl::Seconds(1));
  EXPECT_THAT(scheduler_->Tick(), IsOkAndHolds(1));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("x"));
  EXPECT_EQ(job.state, JobState::kDead);
  EXPECT_THAT(log.Take(), ElementsAre("enqueued:x", "reserved:x", "expired:x",
                                      "reserved:x", "dead:x"));
}

TEST_F(SchedulerTest, CancelRemovesAJobInAnyState) {
  JobOptions options;
  options.id = "order-9";
  options.delay = absl::Minutes(30);
  ASSERT_OK(scheduler_->Enqueue("orders", "9", options));
  ASSERT_OK(scheduler_->Cancel("order-9"));
  EXPECT_THAT(scheduler_->Get("order-9"),
              StatusIs(absl::StatusCode::kNotFound));
  clock_.Advance(absl::Hours(1));
  EXPECT_THAT(scheduler_->Tick(), IsOkAndHolds(0));
  EXPECT_TRUE(NothingReady("orders"));
  EXPECT_THAT(scheduler_->Cancel("order-9"),
              StatusIs(absl::StatusCode::kNotFound));

  ASSERT_OK(scheduler_->Enqueue("orders", "10", JobOptions()));
  Lease lease = MustReserve("orders");
  ASSERT_OK(scheduler_->Cancel(lease.job.id));
  EXPECT_THAT(scheduler_->Ack(lease),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(SchedulerTest, BatchEnqueueAndReserve) {
  std::vector<std::string> payloads = {"a", "b", "c", "d", "e"};
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> ids,
                       scheduler_->EnqueueBatch("t", payloads));
  EXPECT_EQ(ids.size(), 5u);
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       scheduler_->ReserveBatch("t", 3));
  ASSERT_EQ(leases.size(), 3u);
  EXPECT_EQ(leases[0].job.payload, "a");
  EXPECT_EQ(leases[2].job.payload, "c");
  ASSERT_OK_AND_ASSIGN(leases, scheduler_->ReserveBatch("t", 10));
  EXPECT_EQ(leases.size(), 2u);
  ASSERT_OK_AND_ASSIGN(leases, scheduler_->ReserveBatch("t", 10));
  EXPECT_THAT(leases, IsEmpty());

  JobOptions named;
  named.id = "batch";
  ASSERT_OK_AND_ASSIGN(ids, scheduler_->EnqueueBatch("u", payloads, named));
  EXPECT_THAT(
      ids, ElementsAre("batch-0", "batch-1", "batch-2", "batch-3", "batch-4"));
  // All or nothing: one live id refuses the whole batch.
  EXPECT_THAT(scheduler_->EnqueueBatch("u", payloads, named),
              StatusIs(absl::StatusCode::kAlreadyExists));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler_->Stats("u"));
  EXPECT_EQ(stats.ready, 5);
}

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

TEST_F(SchedulerTest, StatsTopicsAndList) {
  ASSERT_OK(scheduler_->Enqueue("a", "1"));
  ASSERT_OK(scheduler_->Enqueue("a", "2", Delayed(absl::Seconds(5))));
  ASSERT_OK(scheduler_->Enqueue("b", "3"));
  MustReserve("b");
  ASSERT_OK_AND_ASSIGN(TopicStats a, scheduler_->Stats("a"));
  EXPECT_EQ(a, (TopicStats{1, 1, 0, 0}));
  ASSERT_OK_AND_ASSIGN(TopicStats b, scheduler_->Stats("b"));
  EXPECT_EQ(b, (TopicStats{0, 0, 1, 0}));
  EXPECT_THAT(scheduler_->Topics(), IsOkAndHolds(ElementsAre("a", "b")));
  ASSERT_OK_AND_ASSIGN(std::vector<Job> delayed,
                       scheduler_->List("a", JobState::kDelayed));
  ASSERT_EQ(delayed.size(), 1u);
  EXPECT_EQ(delayed[0].payload, "2");
  EXPECT_THAT(scheduler_->Stats("bad topic"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// --- Blocking Reserve without Start() ----------------------------------------

TEST_F(SchedulerTest, BlockedReserveWakesOnEnqueue) {
  std::optional<Lease> got;
  std::thread consumer([&] {
    absl::StatusOr<std::optional<Lease>> lease =
        scheduler_->Reserve("t", absl::Hours(1));
    ASSERT_TRUE(lease.ok());
    got = *lease;
  });
  while (clock_.Waiters() == 0) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_OK(scheduler_->Enqueue("t", "wake up"));
  consumer.join();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job.payload, "wake up");
  EXPECT_EQ(clock_.Now(), kStart);  // no time had to pass
}

TEST_F(SchedulerTest, BlockedReserveWakesWhenADelayedJobComesDue) {
  ASSERT_OK(scheduler_->Enqueue("t", "soon", Delayed(absl::Seconds(3))));
  std::optional<Lease> got;
  std::thread consumer([&] {
    absl::StatusOr<std::optional<Lease>> lease =
        scheduler_->Reserve("t", absl::Hours(1));
    ASSERT_TRUE(lease.ok());
    got = *lease;
  });
  while (clock_.Waiters() == 0) absl::SleepFor(absl::Milliseconds(1));
  clock_.Advance(absl::Seconds(3));
  consumer.join();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job.payload, "soon");
}

TEST_F(SchedulerTest, BlockedReserveTimesOutOnTheSchedulersClock) {
  std::atomic<bool> done{false};
  absl::Time returned_at;
  std::thread consumer([&] {
    absl::StatusOr<std::optional<Lease>> lease =
        scheduler_->Reserve("t", absl::Seconds(2));
    ASSERT_TRUE(lease.ok());
    EXPECT_FALSE(lease->has_value());
    returned_at = clock_.Now();
    done = true;
  });
  // The consumer sleeps in steps of at most poll_interval; move the clock
  // whenever it sleeps until it gives up.
  while (!done) {
    if (clock_.Waiters() > 0) clock_.Advance(absl::Milliseconds(500));
    absl::SleepFor(absl::Microseconds(200));
  }
  consumer.join();
  EXPECT_EQ(returned_at, kStart + absl::Seconds(2));
}

// --- Two schedulers on one store (as two processes would be) ----------------

TEST(SharedStoreTest, JobsOfAnotherSchedulerArePromotedFromTheStore) {
  SimulatedClock clock(kStart);
  std::unique_ptr<Backend> store = NewMemoryBackend();
  SchedulerOptions options;
  options.clock = &clock;
  ASSERT_OK_AND_ASSIGN(
      auto producer,
      Scheduler::Create(std::make_unique<BackendWrapper>(store.get()),
                        options));
  JobOptions in_10s;
  in_10s.id = "remote";
  in_10s.delay = absl::Seconds(10);
  ASSERT_OK(producer->Enqueue("t", "p", in_10s));
  producer.reset();  // the producing process is gone

  ASSERT_OK_AND_ASSIGN(
      auto other, Scheduler::Create(
                      std::make_unique<BackendWrapper>(store.get()), options));
  clock.Advance(absl::Seconds(10));
  // `other` never armed a timer for the job; it learnt the due time from
  // the store when it was created.
  EXPECT_THAT(other->Tick(), IsOkAndHolds(1));
  ASSERT_OK_AND_ASSIGN(Job job, other->Get("remote"));
  EXPECT_EQ(job.state, JobState::kReady);
}

}  // namespace
}  // namespace delayq
