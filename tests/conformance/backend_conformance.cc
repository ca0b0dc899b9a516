// Copyright delayq authors.
//
// The fixture and the tests of Add(), Get() and Reserve(). The other
// TEST_Ps of the suite live in lease_conformance.cc (Ack, Fail, Release,
// Touch, Cancel), admin_conformance.cc (List, Stats, Topics, Kick,
// PromoteDue, NextDue) and model_conformance.cc (randomized, against a
// reference model).

#include "tests/conformance/backend_conformance.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "src/common/contract_errors.h"
#include "src/common/validation.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

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

Lease BackendConformanceTest::AddAndReserve(const NewJob& job, absl::Time now) {
  EXPECT_OK(backend_->Add({job}, job.run_at));
  absl::StatusOr<std::vector<Lease>> leases =
      backend_->Reserve(job.topic, 1, now);
  if (!leases.ok() || leases->size() != 1 || (*leases)[0].job.id != job.id) {
    ADD_FAILURE() << "could not reserve " << job.id << ": " << leases.status();
    return Lease{};
  }
  return (*leases)[0];
}

void BackendConformanceTest::ExpectStale(const std::string& id, uint64_t token,
                                         absl::Time now) {
  constexpr absl::StatusCode kStale = absl::StatusCode::kFailedPrecondition;
  absl::StatusOr<Job> before = backend_->Get(id);
  EXPECT_THAT(backend_->Ack(id, token, /*result=*/"", now), StatusIs(kStale));
  EXPECT_THAT(backend_->Fail(id, token, "late", now, now), StatusIs(kStale));
  EXPECT_THAT(backend_->Release(id, token, now, now), StatusIs(kStale));
  EXPECT_THAT(backend_->Touch(id, token, now), StatusIs(kStale));
  absl::StatusOr<Job> after = backend_->Get(id);
  ASSERT_EQ(before.status().code(), after.status().code());
  if (before.ok()) {
    EXPECT_EQ(after->state, before->state);
    EXPECT_EQ(after->attempts, before->attempts);
    EXPECT_EQ(after->deadline, before->deadline);
    EXPECT_EQ(after->run_at, before->run_at);
    EXPECT_EQ(after->last_error, before->last_error);
  }
}

TopicLimit BackendConformanceTest::Share(const TopicLimit& limit) const {
  if (!GetParam().limit_share) return limit;
  return GetParam().limit_share(limit);
}

std::vector<std::string> BackendConformanceTest::Ids(
    const std::vector<Lease>& leases) {
  std::vector<std::string> ids;
  for (const Lease& lease : leases) ids.push_back(lease.job.id);
  return ids;
}

std::vector<std::string> BackendConformanceTest::Ids(
    const std::vector<Job>& jobs) {
  std::vector<std::string> ids;
  for (const Job& job : jobs) ids.push_back(job.id);
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

// The latest run_at and the longest ttr the scheduler accepts read back
// exactly from every store, and so does the lease deadline they make.
TEST_P(BackendConformanceTest, TheLatestTimesRoundTripExactly) {
  const std::string topic = Topic();
  NewJob job = MakeJob("late", topic, ::delayq::internal::kLatestRunAt);
  job.ttr = ::delayq::internal::kLongestDuration;
  ASSERT_OK(backend_->Add({job}, kT0));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("late"));
  EXPECT_EQ(got.run_at, ::delayq::internal::kLatestRunAt);
  EXPECT_EQ(got.ttr, ::delayq::internal::kLongestDuration);
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> leases,
      backend_->Reserve(topic, 1, ::delayq::internal::kLatestRunAt));
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].deadline, ::delayq::internal::kLatestRunAt +
                                    ::delayq::internal::kLongestDuration);
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
  NewJob one_shot = MakeJob("{o}dead", topic);
  one_shot.max_attempts = 1;
  ASSERT_OK(backend_->Add(
      {MakeJob("{o}ready", topic, At(-absl::Seconds(1))), one_shot,
       MakeJob("{o}delayed", topic, At(absl::Hours(1)))},
      kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 2, kT0));
  ASSERT_THAT(Ids(leases), ElementsAre("{o}ready", "{o}dead"));
  ASSERT_OK_AND_ASSIGN(FailOutcome outcome,
                       backend_->Fail("{o}dead", leases[1].token, "boom",
                                      At(absl::Seconds(1)), kT0));
  ASSERT_EQ(outcome, FailOutcome::kDead);
  for (const char* id : {"{o}ready", "{o}dead", "{o}delayed"}) {
    EXPECT_THAT(backend_->Add({MakeJob(id, topic)}, kT0),
                StatusIs(absl::StatusCode::kAlreadyExists))
        << id;
  }
  ASSERT_OK(backend_->Ack("{o}ready", leases[0].token, /*result=*/"", kT0));
  ASSERT_OK(backend_->Cancel("{o}dead", kT0));
  EXPECT_OK(
      backend_->Add({MakeJob("{o}ready", topic), MakeJob("{o}dead", topic)},
                    At(absl::Seconds(1))));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("{o}dead"));
  EXPECT_EQ(got.state, JobState::kReady);
  EXPECT_EQ(got.attempts, 0);
  EXPECT_EQ(got.last_error, "");
  EXPECT_EQ(got.enqueued_at, At(absl::Seconds(1)));
}

TEST_P(BackendConformanceTest, GetUnknownIdIsNotFound) {
  EXPECT_THAT(backend_->Get("nope"), StatusIs(absl::StatusCode::kNotFound));
}

// The program prints these messages as they are; each store words them the
// same.
TEST_P(BackendConformanceTest, ContractErrorsReadTheSameOnEveryStore) {
  const std::string topic = Topic();
  AddOne(MakeJob("a", topic));
  EXPECT_EQ(backend_->Get("nope").status(),
            ::delayq::internal::NoSuchJob("nope"));
  EXPECT_EQ(backend_->Cancel("nope", kT0),
            ::delayq::internal::NoSuchJob("nope"));
  EXPECT_EQ(backend_->KickJob("nope", kT0),
            ::delayq::internal::NoSuchJob("nope"));
  EXPECT_EQ(backend_->Add({MakeJob("a", topic)}, kT0),
            ::delayq::internal::IdInUse("a"));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> got,
                       backend_->Reserve(topic, 1, kT0));
  ASSERT_THAT(Ids(got), ElementsAre("a"));
  const uint64_t stale = got[0].token + 1;
  EXPECT_EQ(backend_->Ack("a", stale, /*result=*/"", kT0),
            ::delayq::internal::StaleLease("a"));
  EXPECT_EQ(backend_->Touch("a", stale, kT0).status(),
            ::delayq::internal::StaleLease("a"));
  EXPECT_EQ(backend_->KickJob("a", kT0),
            ::delayq::internal::NotDead("a", "reserved"));
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

// ------------------------------------------------------------------ Reserve

TEST_P(BackendConformanceTest, ReserveOfEmptyOrUnknownTopicReturnsNothing) {
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(Topic(), 5, kT0));
  EXPECT_THAT(leases, IsEmpty());
}

TEST_P(BackendConformanceTest, ReserveOrdersByPriorityThenRunAtThenEnqueue) {
  const std::string topic = Topic();
  auto job = [&](const char* id, int priority, absl::Duration run_at) {
    NewJob j = MakeJob(id, topic, At(run_at));
    j.priority = priority;
    return j;
  };
  ASSERT_OK(backend_->Add({job("{o}p1-late", 1, -absl::Seconds(1)),
                           job("{o}p1-early", 1, -absl::Seconds(9)),
                           job("{o}p0-b", 0, -absl::Seconds(5)),
                           job("{o}p0-a", 0, -absl::Seconds(5)),
                           job("{o}neg", -3, absl::ZeroDuration()),
                           job("{o}p0-first", 0, -absl::Seconds(6))},
                          kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 10, kT0));
  EXPECT_THAT(Ids(leases), ElementsAre("{o}neg", "{o}p0-first", "{o}p0-b",
                                       "{o}p0-a", "{o}p1-early", "{o}p1-late"));
}

TEST_P(BackendConformanceTest, ReserveOrdersRunAtToTheMicrosecond) {
  const std::string topic = Topic();
  // Enqueued latest first: only run_at, one microsecond apart, can put them
  // in order.
  std::vector<NewJob> jobs;
  for (int us = 7; us >= 0; --us) {
    jobs.push_back(MakeJob(absl::StrCat("{o}us", us), topic,
                           At(-absl::Seconds(1) + absl::Microseconds(us))));
  }
  ASSERT_OK(backend_->Add(jobs, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 10, kT0));
  EXPECT_THAT(Ids(leases), ElementsAre("{o}us0", "{o}us1", "{o}us2", "{o}us3",
                                       "{o}us4", "{o}us5", "{o}us6", "{o}us7"));
}

TEST_P(BackendConformanceTest, ReserveKeepsEnqueueOrderAcrossCallsAndBatches) {
  const std::string topic = Topic();
  // All due at the same time: enqueue order decides, whether the jobs came
  // in one batch or several calls, and whatever their ids.
  ASSERT_OK(
      backend_->Add({MakeJob("{o}z", topic), MakeJob("{o}m", topic)}, kT0));
  AddOne(MakeJob("{o}a", topic), At(absl::Seconds(1)));
  ASSERT_OK(backend_->Add({MakeJob("{o}y", topic), MakeJob("{o}b", topic)},
                          At(absl::Seconds(2))));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> first,
                       backend_->Reserve(topic, 2, At(absl::Seconds(3))));
  EXPECT_THAT(Ids(first), ElementsAre("{o}z", "{o}m"));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> rest,
                       backend_->Reserve(topic, 10, At(absl::Seconds(3))));
  EXPECT_THAT(Ids(rest), ElementsAre("{o}a", "{o}y", "{o}b"));
}

TEST_P(BackendConformanceTest, ReserveTakesOnlyJobsOfItsTopic) {
  AddOne(MakeJob("other", Topic("other")));
  AddOne(MakeJob("mine", Topic()));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(Topic(), 10, kT0));
  EXPECT_THAT(Ids(leases), ElementsAre("mine"));
}

TEST_P(BackendConformanceTest, ReserveWaitsForRunAtOfDelayedJobs) {
  const std::string topic = Topic();
  AddOne(MakeJob("d", topic, At(absl::Seconds(10))));
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> leases,
      backend_->Reserve(topic, 1, At(absl::Milliseconds(9999))));
  EXPECT_THAT(leases, IsEmpty());
  ASSERT_OK_AND_ASSIGN(leases,
                       backend_->Reserve(topic, 1, At(absl::Seconds(10))));
  EXPECT_THAT(Ids(leases), ElementsAre("d"));
}

TEST_P(BackendConformanceTest, ReserveSeesDueDelayedJobsWithoutPromoteDue) {
  const std::string topic = Topic();
  NewJob urgent = MakeJob("{o}urgent-delayed", topic, At(absl::Seconds(5)));
  urgent.priority = -1;
  ASSERT_OK(backend_->Add(
      {MakeJob("{o}ready", topic, kT0),
       MakeJob("{o}early-delayed", topic, At(absl::Seconds(2))), urgent,
       MakeJob("{o}not-yet", topic, At(absl::Seconds(7)))},
      kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 10, At(absl::Seconds(6))));
  EXPECT_THAT(Ids(leases),
              ElementsAre("{o}urgent-delayed", "{o}ready", "{o}early-delayed"));
  EXPECT_EQ(leases[0].job.run_at, At(absl::Seconds(5)));
}

// A million jobs due at once must not make one call hold the store for
// seconds: one Reserve() moves at most kReservePromoteLimit, earliest first.
TEST_P(BackendConformanceTest, ReserveMovesAtMostTheLimitOfDueJobs) {
  const std::string topic = Topic();
  constexpr int kMore = 500;
  std::vector<NewJob> jobs;
  for (int i = 0; i < kReservePromoteLimit + kMore; ++i) {
    jobs.push_back(MakeJob(absl::StrCat("{o}d", i), topic,
                           At(absl::Seconds(1) + absl::Microseconds(i))));
  }
  ASSERT_OK(backend_->Add(jobs, kT0));
  std::vector<Transition> moved;
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 1, At(absl::Hours(1)), &moved));
  EXPECT_EQ(moved.size(), static_cast<size_t>(kReservePromoteLimit));
  EXPECT_THAT(Ids(leases), ElementsAre("{o}d0"));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats, (TopicStats{kMore, kReservePromoteLimit - 1, 1, 0}));
  // The next call moves the rest.
  moved.clear();
  ASSERT_OK_AND_ASSIGN(leases,
                       backend_->Reserve(topic, 1, At(absl::Hours(1)), &moved));
  EXPECT_EQ(moved.size(), static_cast<size_t>(kMore));
  EXPECT_THAT(Ids(leases), ElementsAre("{o}d1"));
}

TEST_P(BackendConformanceTest, ReserveMoreThanAvailableReturnsWhatThereIs) {
  const std::string topic = Topic();
  ASSERT_OK(
      backend_->Add({MakeJob("{o}a", topic), MakeJob("{o}b", topic)}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 100, kT0));
  EXPECT_THAT(Ids(leases), ElementsAre("{o}a", "{o}b"));
  ASSERT_OK_AND_ASSIGN(leases, backend_->Reserve(topic, 100, kT0));
  EXPECT_THAT(leases, IsEmpty());
}

TEST_P(BackendConformanceTest, ReserveCountsAttemptAndSetsDeadlineAndToken) {
  const std::string topic = Topic();
  AddOne(MakeJob("j", topic, At(-absl::Seconds(3))));
  const absl::Time now = At(absl::Milliseconds(250));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend_->Reserve(topic, 1, now));
  ASSERT_EQ(leases.size(), 1u);
  const Lease& lease = leases[0];
  EXPECT_EQ(lease.deadline, now + absl::Seconds(30));
  EXPECT_EQ(lease.job.id, "j");
  EXPECT_EQ(lease.job.topic, topic);
  EXPECT_EQ(lease.job.payload, "payload of j");
  EXPECT_EQ(lease.job.state, JobState::kReserved);
  EXPECT_EQ(lease.job.attempts, 1);
  EXPECT_EQ(lease.job.deadline, lease.deadline);
  EXPECT_EQ(lease.job.run_at, At(-absl::Seconds(3)));
  EXPECT_EQ(lease.job.enqueued_at, kT0);
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("j"));
  EXPECT_EQ(got.state, JobState::kReserved);
  EXPECT_EQ(got.attempts, 1);
  EXPECT_EQ(got.deadline, now + absl::Seconds(30));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats, (TopicStats{0, 0, 1, 0}));
}

TEST_P(BackendConformanceTest, TokensAreFreshForEveryReservation) {
  const std::string topic = Topic();
  ASSERT_OK(backend_->Add({MakeJob("a", topic), MakeJob("b", topic)}, kT0));
  std::vector<uint64_t> tokens;
  absl::Time now = kT0;
  for (int round = 0; round < 3; ++round) {
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                         backend_->Reserve(topic, 2, now));
    ASSERT_EQ(leases.size(), 2u) << round;
    for (const Lease& lease : leases) {
      tokens.push_back(lease.token);
      ASSERT_OK(backend_->Release(lease.job.id, lease.token, now, now));
    }
    now += absl::Seconds(1);
  }
  std::sort(tokens.begin(), tokens.end());
  EXPECT_EQ(std::adjacent_find(tokens.begin(), tokens.end()), tokens.end())
      << "a token was issued twice";
}

TEST_P(BackendConformanceTest, ReserveRedeliversExpiredLeaseAsNewAttempt) {
  const std::string topic = Topic();
  AddOne(MakeJob("j", topic, At(-absl::Seconds(1))));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> first,
                       backend_->Reserve(topic, 1, kT0));
  ASSERT_EQ(first.size(), 1u);
  // Not yet expired at deadline - 1 ms.
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> none,
      backend_->Reserve(topic, 1, first[0].deadline - absl::Milliseconds(1)));
  EXPECT_THAT(none, IsEmpty());
  const absl::Time later = first[0].deadline;
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> second,
                       backend_->Reserve(topic, 1, later));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].job.id, "j");
  EXPECT_EQ(second[0].job.attempts, 2);
  EXPECT_EQ(second[0].job.run_at, At(-absl::Seconds(1))) << "run_at is kept";
  EXPECT_EQ(second[0].deadline, later + absl::Seconds(30));
  EXPECT_NE(second[0].token, first[0].token);
}

TEST_P(BackendConformanceTest, ReserveMovesExpiredLeaseWithoutAttemptsToDead) {
  const std::string topic = Topic();
  NewJob once = MakeJob("once", topic);
  once.max_attempts = 1;
  ASSERT_OK(backend_->Add({once, MakeJob("next", topic)}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> first,
                       backend_->Reserve(topic, 1, kT0));
  ASSERT_THAT(Ids(first), ElementsAre("once"));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> second,
                       backend_->Reserve(topic, 5, At(absl::Minutes(1))));
  EXPECT_THAT(Ids(second), ElementsAre("next"));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("once"));
  EXPECT_EQ(got.state, JobState::kDead);
  EXPECT_EQ(got.attempts, 1);
  EXPECT_EQ(got.last_error, "lease expired");
  EXPECT_EQ(got.deadline, absl::InfinitePast());
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats, (TopicStats{0, 0, 1, 1}));
}

TEST_P(BackendConformanceTest, ReserveMovesEveryDueJobOfItsTopicFirst) {
  const std::string topic = Topic();
  NewJob low = MakeJob("{o}low", topic);
  low.priority = 5;
  ASSERT_OK(backend_->Add(
      {low, MakeJob("{o}held", topic),
       MakeJob("{o}due", topic, At(absl::Seconds(40))),
       MakeJob("{o}other-topic", Topic("b"), At(absl::Seconds(40)))},
      kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> held,
                       backend_->Reserve(topic, 1, kT0));
  ASSERT_THAT(Ids(held), ElementsAre("{o}held"));
  // At +50 s the lease (deadline +30 s) has expired and "{o}due" is due; one
  // Reserve takes "{o}held" back and leaves the other two ready.
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> next,
                       backend_->Reserve(topic, 1, At(absl::Seconds(50))));
  EXPECT_THAT(Ids(next), ElementsAre("{o}held"));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend_->Stats(topic));
  EXPECT_EQ(stats, (TopicStats{0, 2, 1, 0}));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("{o}due"));
  EXPECT_EQ(got.state, JobState::kReady);
  ASSERT_OK_AND_ASSIGN(got, backend_->Get("{o}other-topic"));
  EXPECT_EQ(got.state, JobState::kDelayed) << "other topics are left alone";
}

TEST_P(BackendConformanceTest, ReserveReportsTheJobsItMoved) {
  const std::string topic = Topic();
  NewJob dies = MakeJob("{o}dies", topic);
  dies.max_attempts = 1;
  ASSERT_OK(
      backend_->Add({MakeJob("{o}comes-back", topic), dies,
                     MakeJob("{o}due", topic, At(absl::Seconds(40))),
                     MakeJob("{o}later", topic, At(absl::Seconds(100))),
                     MakeJob("{o}other", Topic("b"), At(absl::Seconds(10)))},
                    kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> held,
                       backend_->Reserve(topic, 2, kT0));
  ASSERT_THAT(Ids(held), ElementsAre("{o}comes-back", "{o}dies"));

  // Nothing is due yet: nothing is reported.
  std::vector<Transition> moved;
  ASSERT_OK(backend_->Reserve(topic, 1, At(absl::Seconds(20)), &moved));
  EXPECT_THAT(moved, IsEmpty());

  // At +50 s both leases (deadline +30 s) have expired and "{o}due" is due.
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> next,
      backend_->Reserve(topic, 1, At(absl::Seconds(50)), &moved));
  EXPECT_THAT(Ids(next), ElementsAre("{o}comes-back"));
  std::vector<std::string> seen;
  for (const Transition& t : moved) {
    EXPECT_EQ(t.topic, topic) << t.id;
    const char* kind = t.kind == Transition::Kind::kPromoted  ? "promoted"
                       : t.kind == Transition::Kind::kExpired ? "expired"
                                                              : "dead";
    seen.push_back(absl::StrCat(t.id, " ", kind, " ", t.attempts));
  }
  EXPECT_THAT(seen,
              UnorderedElementsAre("{o}comes-back expired 1", "{o}dies dead 1",
                                   "{o}due promoted 0"));
}

TEST_P(BackendConformanceTest, ExpiredLeaseIsStaleOnceReserveMovedIt) {
  const std::string topic = Topic();
  NewJob urgent = MakeJob("{o}urgent", topic, At(absl::Seconds(40)));
  urgent.priority = -1;
  ASSERT_OK(backend_->Add({MakeJob("{o}held", topic), urgent}, kT0));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> held,
                       backend_->Reserve(topic, 1, kT0));
  ASSERT_THAT(Ids(held), ElementsAre("{o}held"));
  // Nobody took "{o}held" over, but Reserve moved it back to ready.
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> next,
                       backend_->Reserve(topic, 1, At(absl::Seconds(45))));
  ASSERT_THAT(Ids(next), ElementsAre("{o}urgent"));
  const absl::Time now = At(absl::Seconds(46));
  EXPECT_THAT(backend_->Touch("{o}held", held[0].token, now),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(backend_->Ack("{o}held", held[0].token, /*result=*/"", now),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK_AND_ASSIGN(Job got, backend_->Get("{o}held"));
  EXPECT_EQ(got.state, JobState::kReady);
  EXPECT_EQ(got.attempts, 1);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
