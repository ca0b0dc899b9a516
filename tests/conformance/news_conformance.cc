// Copyright delayq authors.

#include "tests/conformance/news_conformance.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {

NewsPair OpenNewsPair(
    const std::function<absl::StatusOr<std::unique_ptr<Backend>>()>& open,
    std::string where) {
  absl::StatusOr<std::unique_ptr<Backend>> subscriber = open();
  absl::StatusOr<std::unique_ptr<Backend>> other = open();
  EXPECT_TRUE(subscriber.ok()) << subscriber.status();
  EXPECT_TRUE(other.ok()) << other.status();
  if (!subscriber.ok() || !other.ok()) return NewsPair{};
  return NewsPair{*std::move(subscriber), *std::move(other), std::move(where)};
}

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

const absl::Time NewsConformanceTest::kT0 =
    absl::FromUnixSeconds(1'700'000'000);

void NewsConformanceTest::SetUp() {
  NewsPair pair = GetParam().open();
  ASSERT_NE(pair.subscriber, nullptr);
  ASSERT_NE(pair.other, nullptr);
  subscriber_ = std::move(pair.subscriber);
  store_ = std::move(pair.other);
  where_ = std::move(pair.where);
  ASSERT_OK_AND_ASSIGN(subscription_,
                       subscriber_->Subscribe(recorder_.Callback()));
  ASSERT_NE(subscription_, nullptr);
}

void NewsConformanceTest::TearDown() { subscription_.reset(); }

NewJob NewsConformanceTest::MakeJob(std::string name, std::string topic,
                                    absl::Time run_at, absl::Duration ttr,
                                    int max_attempts) {
  NewJob j;
  j.id = Id(name);
  j.topic = std::move(topic);
  j.payload = "p";
  j.run_at = run_at;
  j.ttr = ttr;
  j.max_attempts = max_attempts;
  return j;
}

std::vector<std::string> NewsConformanceTest::Settle() {
  const std::string topic = absl::StrCat("sentinel-", ++sentinels_);
  EXPECT_OK(store_->Add({MakeJob(topic, topic)}, kT0));
  std::vector<std::string> before;
  for (;;) {
    std::string n = recorder_.Next();
    if (n.empty()) {
      ADD_FAILURE() << "the sentinel's news did not come";
      return before;
    }
    if (n == Ready(topic)) return before;
    before.push_back(n);
  }
}

Lease NewsConformanceTest::ReserveOne(absl::string_view topic, absl::Time now) {
  absl::StatusOr<std::vector<Lease>> leases = store_->Reserve(topic, 1, now);
  EXPECT_OK(leases.status());
  if (!leases.ok() || leases->size() != 1) {
    ADD_FAILURE() << "nothing to reserve in " << topic;
    return Lease();
  }
  return (*leases)[0];
}

namespace {

TEST_P(NewsConformanceTest, ReadyIsAnnouncedOnlyWhenTheReadySetWasEmpty) {
  ASSERT_OK(store_->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  ASSERT_OK(store_->Add({MakeJob("b", "t")}, kT0));
  EXPECT_THAT(Settle(), IsEmpty()) << "t already had a ready job";
  // One announcement per topic per call, however many jobs it adds.
  ASSERT_OK(store_->Add({MakeJob("c", "u"), MakeJob("d", "u"),
                         MakeJob("e", "t"), MakeJob("f", "v")},
                        kT0));
  EXPECT_THAT(Settle(), UnorderedElementsAre(Ready("u"), Ready("v")));
}

TEST_P(NewsConformanceTest, ResumingATopicWithReadyJobsIsAnnounced) {
  ASSERT_OK(store_->SetPaused("t", true, kT0));
  ASSERT_OK(store_->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  ASSERT_OK(store_->SetPaused("t", false, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t")) << "waiting workers must look again";
  // Resuming a topic that is not paused, or one with no ready job, is not.
  ASSERT_OK(store_->SetPaused("t", false, kT0));
  ASSERT_OK(store_->SetPaused("u", true, kT0));
  ASSERT_OK(store_->SetPaused("u", false, kT0));
  EXPECT_THAT(Settle(), IsEmpty());
}

TEST_P(NewsConformanceTest, AFullConcurrencyCapThatFreesASlotIsAnnounced) {
  TopicLimit cap;
  cap.concurrency = 1;
  ASSERT_OK(store_->SetLimit("t", cap, kT0));
  ASSERT_OK(store_->Add({MakeJob("a", "t"), MakeJob("b", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  Lease a = ReserveOne("t", kT0);
  Settle();
  ASSERT_OK(store_->Ack(a.job.id, a.token, /*result=*/"", kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t")) << "a worker the cap held must look";
  // A cap that was not full held nobody back: its ack is not announced.
  TopicLimit loose;
  loose.concurrency = 5;
  ASSERT_OK(store_->SetLimit("t", loose, kT0));
  Settle();
  Lease b = ReserveOne("t", kT0);
  ASSERT_OK(store_->Add({MakeJob("c", "t")}, kT0));
  Settle();
  ASSERT_OK(store_->Ack(b.job.id, b.token, /*result=*/"", kT0));
  EXPECT_THAT(Settle(), IsEmpty());
}

TEST_P(NewsConformanceTest, ReplacedJobsAreAnnouncedAsAddedOnes) {
  ASSERT_OK(store_->Add({MakeJob("d", "t", kT0 + absl::Seconds(60))}, kT0));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(60)));
  // Moved earlier than anything known: news.
  ASSERT_OK(store_->Replace(MakeJob("d", "t", kT0 + absl::Seconds(30)), kT0));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(30)));
  // Moved to now: the empty ready set gets it.
  ASSERT_OK(store_->Replace(MakeJob("d", "t", kT0), kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
}

TEST_P(NewsConformanceTest, StoringOrRemovingAScheduleIsAnnounced) {
  ScheduleRecord schedule;
  schedule.name = "nightly";
  schedule.spec = "0 3 * * *";
  schedule.topic = "t";
  ASSERT_OK(store_->PutSchedule(schedule, kT0));
  EXPECT_EQ(recorder_.Next(), Schedules());
  schedule.payload = "changed";
  ASSERT_OK(store_->PutSchedule(schedule, kT0));
  EXPECT_EQ(recorder_.Next(), Schedules());
  ASSERT_OK(store_->RemoveSchedule(schedule.name, kT0));
  EXPECT_EQ(recorder_.Next(), Schedules());
  // Nothing changed, nothing announced.
  EXPECT_EQ(store_->RemoveSchedule(schedule.name, kT0).code(),
            absl::StatusCode::kNotFound);
  EXPECT_THAT(Settle(), IsEmpty());
}

TEST_P(NewsConformanceTest, FiredScheduleJobsAreAnnouncedAsAddedOnes) {
  ScheduleRecord schedule;
  schedule.name = "every-minute";
  schedule.spec = "* * * * *";
  schedule.topic = "t";
  ASSERT_OK(store_->PutSchedule(schedule, kT0));
  EXPECT_EQ(recorder_.Next(), Schedules());
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleRecord> read,
                       store_->ListSchedules());
  ASSERT_EQ(read.size(), 1u);
  ASSERT_OK(store_->FireSchedule(
      schedule.name, read[0].revision, kT0,
      {MakeJob("now", "t"), MakeJob("later", "u", kT0 + absl::Seconds(45))},
      kT0));
  EXPECT_THAT(Settle(),
              UnorderedElementsAre(Ready("t"), Due(absl::Seconds(45))));
}

TEST_P(NewsConformanceTest, DueIsAnnouncedWhenEarlierThanTheHorizon) {
  // No horizon yet: the first delayed job is news.
  ASSERT_OK(store_->Add({MakeJob("d60", "t", kT0 + absl::Seconds(60))}, kT0));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(60)));
  ASSERT_OK(store_->Add({MakeJob("d120", "t", kT0 + absl::Seconds(120))}, kT0));
  EXPECT_THAT(Settle(), IsEmpty()) << "later than what subscribers know";
  // A batch announces its earliest run_at, once.
  ASSERT_OK(store_->Add({MakeJob("d40", "t", kT0 + absl::Seconds(40)),
                         MakeJob("d30", "t", kT0 + absl::Seconds(30)),
                         MakeJob("d50", "t", kT0 + absl::Seconds(50))},
                        kT0));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(30))));
  // A horizon that has passed says nothing: the next time stored is news
  // even though it is later.
  ASSERT_OK(store_->Add({MakeJob("d200", "t", kT0 + absl::Seconds(200))},
                        kT0 + absl::Seconds(31)));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(200))));
}

TEST_P(NewsConformanceTest, PromotionAndExpiryIntoAnEmptyReadySetAreAnnounced) {
  ASSERT_OK(store_->Add({MakeJob("p", "t", kT0 + absl::Seconds(10))}, kT0));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(10)));
  ASSERT_OK_AND_ASSIGN(PromoteResult r,
                       store_->PromoteDue(kT0 + absl::Seconds(10), 10));
  ASSERT_EQ(r.transitions.size(), 1u);
  EXPECT_EQ(recorder_.Next(), Ready("t"));

  // The lease's deadline is news too (the horizon at +10 s has passed).
  ReserveOne("t", kT0 + absl::Seconds(10));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(40)));
  ASSERT_OK_AND_ASSIGN(r, store_->PromoteDue(kT0 + absl::Seconds(40), 10));
  ASSERT_EQ(r.transitions.size(), 1u);
  EXPECT_EQ(r.transitions[0].kind, Transition::Kind::kExpired);
  EXPECT_EQ(recorder_.Next(), Ready("t"));

  // Reserve() promotes its topic's due jobs itself; what it leaves ready
  // is news.
  ASSERT_OK(store_->Add({MakeJob("q1", "u", kT0 + absl::Seconds(50)),
                         MakeJob("q2", "u", kT0 + absl::Seconds(50))},
                        kT0 + absl::Seconds(41)));
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(50)));
  std::vector<Transition> moved;
  ASSERT_OK_AND_ASSIGN(
      std::vector<Lease> leases,
      store_->Reserve("u", 1, kT0 + absl::Seconds(60), &moved));
  ASSERT_EQ(moved.size(), 2u);
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_THAT(Settle(), ElementsAre(Ready("u"), Due(absl::Seconds(90))));
}

TEST_P(NewsConformanceTest,
       LeaseDeadlinesAreAnnouncedWhenEarlierThanTheHorizon) {
  ASSERT_OK(store_->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  ReserveOne("t", kT0);
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(30)));
  ASSERT_OK(store_->Add({MakeJob("b", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t")) << "the reservation emptied t";
  ReserveOne("t", kT0 + absl::Seconds(1));
  EXPECT_THAT(Settle(), IsEmpty()) << "+31 s is later than +30 s";
  // A batch announces its earliest deadline.
  ASSERT_OK(store_->Add({MakeJob("c", "t", kT0, absl::Seconds(20)),
                         MakeJob("d", "t", kT0, absl::Seconds(5)),
                         MakeJob("e", "t", kT0, absl::Seconds(10))},
                        kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       store_->Reserve("t", 3, kT0 + absl::Seconds(2)));
  ASSERT_EQ(leases.size(), 3u);
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(7))));
  // Touch() moves a deadline: news when the horizon (+7 s) has passed.
  ASSERT_OK_AND_ASSIGN(
      absl::Time deadline,
      store_->Touch(leases[0].job.id, leases[0].token, kT0 + absl::Seconds(8)));
  EXPECT_EQ(deadline, kT0 + absl::Seconds(28));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(28))));
}

TEST_P(NewsConformanceTest, RetriesReleasesAndKicksAreAnnounced) {
  ASSERT_OK(store_->Add({MakeJob("a", "t")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  Lease l = ReserveOne("t", kT0);
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(30)));
  ASSERT_OK_AND_ASSIGN(FailOutcome out,
                       store_->Fail(Id("a"), l.token, "boom", kT0, kT0));
  ASSERT_EQ(out, FailOutcome::kRetry);
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  l = ReserveOne("t", kT0);
  ASSERT_OK(store_->Release(Id("a"), l.token, kT0, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("t"));
  // A delayed retry earlier than the horizon (+30 s) is due news.
  l = ReserveOne("t", kT0);
  ASSERT_OK_AND_ASSIGN(
      out, store_->Fail(Id("a"), l.token, "boom", kT0 + absl::Seconds(3), kT0));
  ASSERT_EQ(out, FailOutcome::kRetry);
  EXPECT_EQ(recorder_.Next(), Due(absl::Seconds(3)));
  // So is a delayed release.
  ASSERT_OK(store_->Add({MakeJob("b", "u")}, kT0));
  EXPECT_EQ(recorder_.Next(), Ready("u"));
  l = ReserveOne("u", kT0);
  ASSERT_OK(store_->Release(Id("b"), l.token, kT0 + absl::Seconds(2), kT0));
  EXPECT_THAT(Settle(), ElementsAre(Due(absl::Seconds(2))));

  // Kicks of dead jobs.
  ASSERT_OK(store_->Add({MakeJob("x", "k", kT0, absl::Seconds(30), 1),
                         MakeJob("y", "k", kT0, absl::Seconds(30), 1)},
                        kT0));
  EXPECT_EQ(recorder_.Next(), Ready("k"));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> two,
                       store_->Reserve("k", 2, kT0 + absl::Seconds(1)));
  ASSERT_EQ(two.size(), 2u);
  for (const Lease& d : two) {
    ASSERT_OK_AND_ASSIGN(out, store_->Fail(d.job.id, d.token, "boom", kT0,
                                           kT0 + absl::Seconds(1)));
    ASSERT_EQ(out, FailOutcome::kDead);
  }
  EXPECT_THAT(Settle(), IsEmpty()) << "deaths are no news";
  ASSERT_OK(store_->KickJob(Id("x"), kT0 + absl::Seconds(1)));
  EXPECT_EQ(recorder_.Next(), Ready("k"));
  ReserveOne("k", kT0 + absl::Seconds(1));
  ASSERT_OK_AND_ASSIGN(int kicked, store_->Kick("k", 10, kT0));
  EXPECT_EQ(kicked, 1);
  EXPECT_THAT(Settle(), ElementsAre(Ready("k")));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
