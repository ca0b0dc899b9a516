// Copyright delayq authors.
//
// What Scheduler::Create() and Enqueue() take and refuse: bad arguments,
// times no store keeps exactly, ids, payload sizes, live ids reused.
// On the memory store and a simulated clock: nothing here depends on
// real time, so every test is deterministic.

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "delayq/memory_backend.h"
#include "delayq/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/common/validation.h"
#include "tests/scheduler/scheduler_fixture.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::StatusIs;

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

// A call that names a job refuses an id no job can have, as Enqueue()
// does, rather than saying NOT_FOUND for it.
TEST_F(SchedulerTest, CallsThatNameAJobRefuseAnIdNoJobCanHave) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  for (const std::string& id :
       {std::string(201, 'x'), std::string("a\nb"), std::string("del\x7f")}) {
    SCOPED_TRACE(absl::CHexEscape(id));
    EXPECT_THAT(Scheduler::CheckJobId(id), StatusIs(kInvalid));
    EXPECT_THAT(scheduler_->Get(id), StatusIs(kInvalid));
    EXPECT_THAT(scheduler_->Cancel(id), StatusIs(kInvalid));
    EXPECT_THAT(scheduler_->CancelFlow(id), StatusIs(kInvalid));
    EXPECT_THAT(scheduler_->KickJob(id), StatusIs(kInvalid));
    EXPECT_THAT(scheduler_->Promote(id), StatusIs(kInvalid));
    EXPECT_THAT(scheduler_->WaitForResult(id, absl::ZeroDuration()),
                StatusIs(kInvalid));
  }
  EXPECT_THAT(scheduler_->Get(std::string(200, 'x')),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_OK(Scheduler::CheckJobId(std::string(200, 'x')));
  EXPECT_OK(Scheduler::CheckTopic("orders.eu-1:pay"));
  EXPECT_THAT(Scheduler::CheckTopic("two words"), StatusIs(kInvalid));
  EXPECT_THAT(Scheduler::CheckTopic(""), StatusIs(kInvalid));
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

}  // namespace
}  // namespace delayq
