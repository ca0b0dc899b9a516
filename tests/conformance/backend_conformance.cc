// Copyright delayq authors.
//
// The fixture and the tests of Add(), Get() and Reserve(). The other
// TEST_Ps of the suite live in lease_conformance.cc (Ack, Fail, Release,
// Touch, Cancel), admin_conformance.cc (List, Stats, Topics, Kick,
// PromoteDue, NextDue) and model_conformance.cc (randomized, against a
// reference model).

#include "tests/conformance/backend_conformance.h"

#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string BackendFactoryName(
    const ::testing::TestParamInfo<BackendFactory>& info) {
  return info.param.name;
}

void BackendConformanceTest::SetUp() {
  absl::StatusOr<std::unique_ptr<Backend>> made = GetParam().make();
  ASSERT_TRUE(made.ok()) << made.status();
  backend_ = std::move(made).value();
  ASSERT_NE(backend_, nullptr);
}

std::string BackendConformanceTest::Topic(absl::string_view suffix) const {
  const ::testing::TestInfo* info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  // "AddSingle/memory" -> "AddSingle.memory.q": only [A-Za-z0-9._:-].
  return absl::StrReplaceAll(info->name(), {{"/", "."}, {"_", "."}}) + "." +
         std::string(suffix);
}

NewJob BackendConformanceTest::MakeJob(absl::string_view id,
                                       absl::string_view topic,
                                       absl::Time run_at) {
  NewJob job;
  job.id = std::string(id);
  job.topic = std::string(topic);
  job.payload = "payload of " + job.id;
  job.priority = 0;
  job.max_attempts = 3;
  job.ttr = absl::Seconds(30);
  job.backoff = Backoff::Fixed(absl::Seconds(5));
  job.run_at = run_at;
  return job;
}

void BackendConformanceTest::AddOne(const NewJob& job, absl::Time now) {
  ASSERT_OK(backend_->Add({job}, now));
}

std::vector<std::string> BackendConformanceTest::Ids(
    const std::vector<Lease>& leases) {
  std::vector<std::string> ids;
  for (const Lease& lease : leases) ids.push_back(lease.job.id);
  return ids;
}

namespace {

// ---------------------------------------------------------------- Add / Get

TEST_P(BackendConformanceTest, AddReadyJobStoresEveryField) {
  const std::string topic = Topic();
  NewJob job = MakeJob("j1", topic, At(-absl::Milliseconds(1500)));
  job.payload = std::string("bin\0ary\xff\x01 bytes", 16);
  job.priority = -7;
  job.max_attempts = 9;
  job.ttr = absl::Milliseconds(12'345);
  job.backoff = Backoff::Exponential(absl::Milliseconds(250), absl::Hours(2));
  ASSERT_OK(backend_->Add({job}, At(absl::Milliseconds(7))));

  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("j1"));
  EXPECT_EQ(got.id, "j1");
  EXPECT_EQ(got.topic, topic);
  EXPECT_EQ(got.payload, job.payload);
  EXPECT_EQ(got.payload.size(), 16u);
  EXPECT_EQ(got.state, JobState::kReady);
  EXPECT_EQ(got.priority, -7);
  EXPECT_EQ(got.attempts, 0);
  EXPECT_EQ(got.max_attempts, 9);
  EXPECT_EQ(got.ttr, absl::Milliseconds(12'345));
  EXPECT_EQ(got.backoff, job.backoff);
  EXPECT_EQ(got.enqueued_at, At(absl::Milliseconds(7)));
  EXPECT_EQ(got.run_at, At(-absl::Milliseconds(1500)));
  EXPECT_EQ(got.deadline, absl::InfinitePast());
  EXPECT_EQ(got.last_error, "");
}

TEST_P(BackendConformanceTest, AddDelayedJobWhenRunAtIsAfterNow) {
  const std::string topic = Topic();
  NewJob later = MakeJob("later", topic, At(absl::Milliseconds(1)));
  later.backoff = Backoff::Fixed(absl::Milliseconds(1234));
  ASSERT_OK(backend_->Add({later, MakeJob("now", topic, kT0)}, kT0));

  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("later"));
  EXPECT_EQ(got.state, JobState::kDelayed);
  EXPECT_EQ(got.run_at, At(absl::Milliseconds(1)));
  EXPECT_EQ(got.backoff, Backoff::Fixed(absl::Milliseconds(1234)));
  ASSERT_OK_AND_ASSIGN(got, backend_->Get("now"));
  EXPECT_EQ(got.state, JobState::kReady) << "run_at == now is ready";
}

TEST_P(BackendConformanceTest, TimesRoundTripAtMillisecondPrecision) {
  const std::string topic = Topic();
  const absl::Duration offsets[] = {
      absl::Milliseconds(1), absl::Milliseconds(999), absl::Milliseconds(1001),
      absl::Hours(24 * 400) + absl::Milliseconds(3),
      -absl::Hours(24 * 365 * 20) - absl::Milliseconds(17)};
  for (int i = 0; i < 5; ++i) {
    AddOne(MakeJob("t" + std::to_string(i), topic, At(offsets[i])),
           At(absl::Milliseconds(i)));
  }
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("t" + std::to_string(i)));
    EXPECT_EQ(got.run_at, At(offsets[i])) << i;
    EXPECT_EQ(got.enqueued_at, At(absl::Milliseconds(i))) << i;
  }
}

TEST_P(BackendConformanceTest, AddEmptyBatchIsANoOp) {
  EXPECT_OK(backend_->Add({}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> topics, backend_->Topics());
  EXPECT_THAT(topics, IsEmpty());
}

TEST_P(BackendConformanceTest, AddBatchStoresEveryJob) {
  const std::string topic = Topic();
  ASSERT_OK(backend_->Add({MakeJob("a", topic), MakeJob("b", topic),
                           MakeJob("c", topic, At(absl::Seconds(1)))},
                          kT0));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats, (TopicStats{1, 2, 0, 0}));
}

TEST_P(BackendConformanceTest, AddBatchIsAllOrNothingWhenAnIdIsLive) {
  const std::string topic = Topic();
  AddOne(MakeJob("live", topic));
  NewJob changed = MakeJob("live", Topic("other"));
  changed.payload = "changed";
  EXPECT_THAT(
      backend_->Add({MakeJob("new1", topic), changed, MakeJob("new2", topic)},
                    kT0),
      StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(backend_->Get("new1"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(backend_->Get("new2"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("live"));
  EXPECT_EQ(got.topic, topic);
  EXPECT_EQ(got.payload, "payload of live");
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats, (TopicStats{0, 1, 0, 0}));
  ASSERT_OK_AND_ASSIGN(stats, backend_->Stats(Topic("other")));
  EXPECT_EQ(stats, TopicStats{});
}

TEST_P(BackendConformanceTest, AddBatchWithTheSameIdTwiceStoresNothing) {
  const std::string topic = Topic();
  EXPECT_THAT(
      backend_->Add(
          {MakeJob("x", topic), MakeJob("y", topic), MakeJob("x", topic)}, kT0),
      StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(backend_->Get("x"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(backend_->Get("y"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> topics, backend_->Topics());
  EXPECT_THAT(topics, IsEmpty());
}

TEST_P(BackendConformanceTest, IdIsLiveInEveryStateAndFreeAfterAckOrCancel) {
  const std::string topic = Topic();
  NewJob one_shot = MakeJob("dead", topic);
  one_shot.max_attempts = 1;
  ASSERT_OK(
      backend_->Add({MakeJob("ready", topic, At(-absl::Seconds(1))), one_shot,
                     MakeJob("delayed", topic, At(absl::Hours(1)))},
                    kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 2, kT0));
  ASSERT_THAT(Ids(leases), ElementsAre("ready", "dead"));
  ASSERT_OK_AND_ASSIGN(FailOutcome outcome,
                       backend_->Fail("dead", leases[1].token, "boom",
                                      At(absl::Seconds(1)), kT0));
  ASSERT_EQ(outcome, FailOutcome::kDead);
  for (const char* id : {"ready", "dead", "delayed"}) {
    EXPECT_THAT(backend_->Add({MakeJob(id, topic)}, kT0),
                StatusIs(absl::StatusCode::kAlreadyExists))
        << id;
  }
  ASSERT_OK(backend_->Ack("ready", leases[0].token, kT0));
  ASSERT_OK(backend_->Cancel("dead", kT0));
  EXPECT_OK(backend_->Add({MakeJob("ready", topic), MakeJob("dead", topic)},
                          At(absl::Seconds(1))));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("dead"));
  EXPECT_EQ(got.state, JobState::kReady);
  EXPECT_EQ(got.attempts, 0);
  EXPECT_EQ(got.last_error, "");
  EXPECT_EQ(got.enqueued_at, At(absl::Seconds(1)));
}

TEST_P(BackendConformanceTest, GetUnknownIdIsNotFound) {
  EXPECT_THAT(backend_->Get("nope"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_P(BackendConformanceTest, GetShowsDueDelayedJobAsStoredUntilMoved) {
  const std::string topic = Topic();
  AddOne(MakeJob("d", topic, At(absl::Seconds(1))));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("d"));
  EXPECT_EQ(got.state, JobState::kDelayed);
  ASSERT_OK(backend_->PromoteDue(At(absl::Seconds(1)), 10).status());
  ASSERT_OK_AND_ASSIGN(got, backend_->Get("d"));
  EXPECT_EQ(got.state, JobState::kReady);
  EXPECT_EQ(got.run_at, At(absl::Seconds(1)));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
