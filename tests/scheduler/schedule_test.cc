// Copyright delayq authors.
//
// Periodic schedules on the memory store and a simulated clock: cron
// occurrences across daylight-saving changes and month ends, what happens
// to occurrences missed while no scheduler ran, and several schedulers on
// one store enqueueing each occurrence once. Schedulers share a store
// through BackendWrapper, as processes share a SQLite file or Redis.

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "delayq/memory_backend.h"
#include "delayq/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

absl::Time Utc(const std::string& text) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime("%Y-%m-%d %H:%M:%S", text, &t, &err)) << err;
  return t;
}

// The ids of the jobs a scheduler enqueued, in order.
class Enqueued {
 public:
  void Attach(Scheduler& scheduler) {
    scheduler.AddListener([this](const Event& e) {
      if (e.type != EventType::kEnqueued) return;
      absl::MutexLock lock(&mu_);
      ids_.push_back(e.id);
    });
  }
  std::vector<std::string> Take() {
    absl::MutexLock lock(&mu_);
    return std::move(ids_);
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> ids_;
};

class ScheduleTest : public ::testing::Test {
 protected:
  // A scheduler over the shared store. It looks at the store on its own
  // every `poll_interval`.
  std::unique_ptr<Scheduler> NewScheduler(
      absl::Duration poll_interval = absl::Seconds(1)) {
    SchedulerOptions options;
    options.clock = &clock_;
    options.poll_interval = poll_interval;
    absl::StatusOr<std::unique_ptr<Scheduler>> s = Scheduler::Create(
        std::make_unique<BackendWrapper>(store_.get()), options);
    EXPECT_OK(s.status());
    return s.ok() ? *std::move(s) : nullptr;
  }

  void Start(absl::Time at) {
    clock_.Set(at);
    scheduler_ = NewScheduler();
    ASSERT_NE(scheduler_, nullptr);
    log_.Attach(*scheduler_);
  }

  // The earliest next run of any schedule.
  absl::Time NextRun(Scheduler& s) {
    absl::StatusOr<std::vector<ScheduleInfo>> all = s.Schedules();
    EXPECT_OK(all.status());
    absl::Time next = absl::InfiniteFuture();
    if (all.ok()) {
      for (const ScheduleInfo& info : *all)
        next = std::min(next, info.next_run);
    }
    return next;
  }

  // Ticks at every next run up to `end`, as a timer thread would, and
  // returns the jobs enqueued meanwhile.
  std::vector<std::string> TickThrough(absl::Time end) {
    for (;;) {
      const absl::Time next = NextRun(*scheduler_);
      if (next > end) break;
      clock_.Set(next);
      EXPECT_OK(scheduler_->Tick().status());
    }
    clock_.Set(end);
    EXPECT_OK(scheduler_->Tick().status());
    return log_.Take();
  }

  SimulatedClock clock_{absl::FromUnixSeconds(0)};
  std::unique_ptr<Backend> store_ = NewMemoryBackend();
  std::unique_ptr<Scheduler> scheduler_;
  Enqueued log_;
};

ScheduleOptions In(const std::string& zone) {
  ScheduleOptions o;
  o.time_zone = zone;
  return o;
}

ScheduleOptions Missed(MissedPolicy policy) {
  ScheduleOptions o;
  o.missed = policy;
  return o;
}

TEST_F(ScheduleTest, EachOccurrenceIsOneJobNamedAfterIt) {
  Start(Utc("2026-01-01 00:00:05"));
  ScheduleOptions options;
  options.job.priority = 7;
  options.job.max_attempts = 2;
  options.job.ttr = absl::Seconds(5);
  ASSERT_OK(
      scheduler_->Schedule("tick", "@every 10s", "ticks", "hello", options));
  EXPECT_THAT(
      TickThrough(Utc("2026-01-01 00:00:35")),
      ElementsAre("tick@2026-01-01T00:00:10Z", "tick@2026-01-01T00:00:20Z",
                  "tick@2026-01-01T00:00:30Z"));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("tick@2026-01-01T00:00:20Z"));
  EXPECT_EQ(job.topic, "ticks");
  EXPECT_EQ(job.payload, "hello");
  EXPECT_EQ(job.priority, 7);
  EXPECT_EQ(job.max_attempts, 2);
  EXPECT_EQ(job.ttr, absl::Seconds(5));
  EXPECT_EQ(job.run_at, Utc("2026-01-01 00:00:20"));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler_->Stats("ticks"));
  EXPECT_EQ(stats.ready, 3);
}

// The occurrence is armed in the timing wheel: a Reserve() that waits, on
// a host that never calls Tick(), still gets it when it comes.
TEST_F(ScheduleTest, AWaitingReserveGetsTheOccurrenceWhenItComes) {
  Start(Utc("2026-01-01 00:00:00"));
  ASSERT_OK(scheduler_->Schedule("m", "* * * * *", "t", "p"));
  clock_.Set(Utc("2026-01-01 00:01:00"));
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> lease,
                       scheduler_->Reserve("t", absl::Milliseconds(1)));
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->job.id, "m@2026-01-01T00:01:00Z");
}

TEST_F(ScheduleTest, BerlinRunsSkippedTimesAfterTheGapAndRepeatedOnesOnce) {
  Start(Utc("2026-03-27 12:00:00"));
  ASSERT_OK(
      scheduler_->Schedule("n", "30 2 * * *", "t", "", In("Europe/Berlin")));
  // 02:30 CET is 01:30Z; on the 29th 02:30 does not exist and it runs at
  // 03:00 CEST (01:00Z); then 02:30 CEST is 00:30Z.
  EXPECT_THAT(TickThrough(Utc("2026-03-31 12:00:00")),
              ElementsAre("n@2026-03-28T01:30:00Z", "n@2026-03-29T01:00:00Z",
                          "n@2026-03-30T00:30:00Z", "n@2026-03-31T00:30:00Z"));
  // On 2026-10-25 02:30 happens at 00:30Z (CEST) and at 01:30Z (CET): once.
  clock_.Set(Utc("2026-10-23 12:00:00"));
  ASSERT_OK(scheduler_->Unschedule("n"));
  ASSERT_OK(
      scheduler_->Schedule("n", "30 2 * * *", "t", "", In("Europe/Berlin")));
  EXPECT_THAT(TickThrough(Utc("2026-10-26 12:00:00")),
              ElementsAre("n@2026-10-24T00:30:00Z", "n@2026-10-25T00:30:00Z",
                          "n@2026-10-26T01:30:00Z"));
}

TEST_F(ScheduleTest, NewYorkHourlyAcrossBothChanges) {
  Start(Utc("2026-03-08 05:30:00"));  // 00:30 EST
  ASSERT_OK(
      scheduler_->Schedule("h", "0 * * * *", "t", "", In("America/New_York")));
  // 01:00 EST, then 03:00 EDT: the clocks skip 02:00, which has no
  // occurrence to run after the gap (03:00 is the gap's end and runs once).
  EXPECT_THAT(TickThrough(Utc("2026-03-08 08:30:00")),
              ElementsAre("h@2026-03-08T06:00:00Z", "h@2026-03-08T07:00:00Z",
                          "h@2026-03-08T08:00:00Z"));
  clock_.Set(Utc("2026-11-01 04:30:00"));  // 00:30 EDT
  log_.Take();
  ASSERT_OK(scheduler_->Unschedule("h"));
  ASSERT_OK(
      scheduler_->Schedule("h", "0 * * * *", "t", "", In("America/New_York")));
  // 01:00 EDT (05:00Z), then 02:00 EST (07:00Z): the second 01:00 (06:00Z)
  // is the same local time and does not run again.
  EXPECT_THAT(TickThrough(Utc("2026-11-01 07:30:00")),
              ElementsAre("h@2026-11-01T05:00:00Z", "h@2026-11-01T07:00:00Z"));
}

TEST_F(ScheduleTest, MonthEndsAndLeapDays) {
  Start(Utc("2026-01-01 00:00:00"));
  ASSERT_OK(scheduler_->Schedule("eom", "0 12 31 * *", "t", ""));
  ASSERT_OK(scheduler_->Schedule("leap", "0 0 29 2 *", "t", ""));
  std::vector<std::string> ids = TickThrough(Utc("2028-12-31 00:00:00"));
  std::vector<std::string> leap, eom;
  for (const std::string& id : ids) (id[0] == 'l' ? leap : eom).push_back(id);
  EXPECT_THAT(leap, ElementsAre("leap@2028-02-29T00:00:00Z"));
  // Seven months of 31 days a year; two whole years and 2028 up to Dec 30.
  EXPECT_THAT(eom, SizeIs(7 + 7 + 6));
  EXPECT_EQ(eom[0], "eom@2026-01-31T12:00:00Z");
  EXPECT_EQ(eom[1], "eom@2026-03-31T12:00:00Z");
  EXPECT_EQ(eom[2], "eom@2026-05-31T12:00:00Z");
  EXPECT_EQ(eom[3], "eom@2026-07-31T12:00:00Z");
  EXPECT_EQ(eom[4], "eom@2026-08-31T12:00:00Z");
}

struct CatchUp {
  const char* policy;
  const char* back_at;  // when the scheduler runs again
  std::vector<std::string> enqueued;
};

class CatchUpTest : public ScheduleTest,
                    public ::testing::WithParamInterface<CatchUp> {};

// An hourly schedule ran at 01:00; then no scheduler ran until `back_at`.
TEST_P(CatchUpTest, MissedOccurrencesRunAsThePolicySays) {
  const CatchUp& c = GetParam();
  MissedPolicy policy;
  ASSERT_TRUE(ParseMissedPolicy(c.policy, &policy));
  Start(Utc("2026-01-01 00:30:00"));
  ASSERT_OK(scheduler_->Schedule("h", "0 * * * *", "t", "", Missed(policy)));
  EXPECT_THAT(TickThrough(Utc("2026-01-01 01:30:00")),
              ElementsAre("h@2026-01-01T01:00:00Z"));
  scheduler_.reset();  // down

  clock_.Set(Utc(c.back_at));
  std::unique_ptr<Scheduler> back = NewScheduler();
  Enqueued log;
  log.Attach(*back);
  // Every process stores its schedules at start; the same spec keeps what
  // was done.
  ASSERT_OK(back->Schedule("h", "0 * * * *", "t", "", Missed(policy)));
  ASSERT_OK(back->Tick().status());
  EXPECT_EQ(log.Take(), c.enqueued);
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleInfo> all, back->Schedules());
  ASSERT_THAT(all, SizeIs(1));
  EXPECT_EQ(all[0].next_run, Utc("2026-01-01 07:00:00"));
}

INSTANTIATE_TEST_SUITE_P(
    Policies, CatchUpTest,
    ::testing::Values(
        // Back half an hour after 06:00: 02:00 to 06:00 were missed.
        CatchUp{"skip", "2026-01-01 06:30:00", {}},
        CatchUp{"once", "2026-01-01 06:30:00", {"h@2026-01-01T06:00:00Z"}},
        CatchUp{"all:3",
                "2026-01-01 06:30:00",
                {"h@2026-01-01T04:00:00Z", "h@2026-01-01T05:00:00Z",
                 "h@2026-01-01T06:00:00Z"}},
        CatchUp{"all:10",
                "2026-01-01 06:30:00",
                {"h@2026-01-01T02:00:00Z", "h@2026-01-01T03:00:00Z",
                 "h@2026-01-01T04:00:00Z", "h@2026-01-01T05:00:00Z",
                 "h@2026-01-01T06:00:00Z"}},
        // Back just after 06:00: that one is on time and runs whatever the
        // policy; 02:00 to 05:00 were missed.
        CatchUp{"skip", "2026-01-01 06:00:00", {"h@2026-01-01T06:00:00Z"}},
        CatchUp{"once",
                "2026-01-01 06:00:00",
                {"h@2026-01-01T05:00:00Z", "h@2026-01-01T06:00:00Z"}},
        CatchUp{"all:2",
                "2026-01-01 06:00:00",
                {"h@2026-01-01T04:00:00Z", "h@2026-01-01T05:00:00Z",
                 "h@2026-01-01T06:00:00Z"}}),
    [](const ::testing::TestParamInfo<CatchUp>& info) {
      std::string name = info.param.policy;
      std::replace(name.begin(), name.end(), ':', '_');
      return name + (absl::string_view(info.param.back_at).substr(14, 2) == "30"
                         ? "_late"
                         : "_on_time");
    });

// Three schedulers on one store run the same schedule; each ticks at every
// occurrence, in turns and all at once, and a worker finishes each job as
// soon as it is ready (so an occurrence's id is free again at once). Every
// occurrence runs once.
TEST_F(ScheduleTest, SeveralSchedulersEnqueueEachOccurrenceOnce) {
  Start(Utc("2026-01-01 00:00:00"));
  std::vector<std::unique_ptr<Scheduler>> fleet;
  std::vector<std::unique_ptr<Enqueued>> logs;
  // They do not look at the store on their own meanwhile: what one knows of
  // the others' work is what the store tells it when it fires.
  for (int i = 0; i < 3; ++i) {
    fleet.push_back(NewScheduler(absl::Hours(1)));
    logs.push_back(std::make_unique<Enqueued>());
    logs.back()->Attach(*fleet.back());
    ASSERT_OK(fleet.back()->Schedule("beat", "@every 1s", "t", ""));
  }
  std::multiset<std::string> ran;
  auto work = [&] {
    for (;;) {
      absl::StatusOr<std::optional<Lease>> lease = scheduler_->Reserve("t");
      ASSERT_OK(lease.status());
      if (!lease->has_value()) return;
      ran.insert((*lease)->job.id);
      ASSERT_OK(scheduler_->Ack(**lease));
    }
  };
  for (int second = 1; second <= 120; ++second) {
    clock_.Set(Utc("2026-01-01 00:00:00") + absl::Seconds(second));
    if (second % 2 == 0) {
      std::vector<std::thread> threads;
      for (auto& s : fleet) {
        threads.emplace_back([&s] { EXPECT_OK(s->Tick().status()); });
      }
      for (std::thread& t : threads) t.join();
      work();
    } else {
      for (int i = 0; i < 3; ++i) {
        EXPECT_OK(fleet[(second + i) % 3]->Tick().status());
        work();
      }
    }
  }
  EXPECT_EQ(ran.size(), 120u);
  EXPECT_EQ(std::set<std::string>(ran.begin(), ran.end()).size(), 120u);
  std::vector<size_t> per_scheduler;
  size_t enqueued = 0;
  for (auto& log : logs) {
    per_scheduler.push_back(log->Take().size());
    enqueued += per_scheduler.back();
  }
  EXPECT_EQ(enqueued, 120u);
  // Turns were taken: more than one scheduler enqueued some.
  EXPECT_GT(std::count_if(per_scheduler.begin(), per_scheduler.end(),
                          [](size_t n) { return n > 0; }),
            1);
}

// Another scheduler on the store still holds the old spec; its next tick
// at the old time is refused, it reads the schedules again, and the new
// spec runs from its next occurrence.
TEST_F(ScheduleTest, ANewSpecTakesEffectAtItsNextOccurrence) {
  Start(Utc("2026-01-01 00:00:00"));
  // It does not look at the store on its own meanwhile.
  std::unique_ptr<Scheduler> other = NewScheduler(absl::Hours(1));
  Enqueued other_log;
  other_log.Attach(*other);
  ASSERT_OK(scheduler_->Schedule("s", "@every 10s", "t", ""));
  ASSERT_OK(other->Schedule("s", "@every 10s", "t", ""));
  EXPECT_THAT(TickThrough(Utc("2026-01-01 00:00:15")),
              ElementsAre("s@2026-01-01T00:00:10Z"));

  ASSERT_OK(scheduler_->Schedule("s", "@every 1m", "t", ""));
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleInfo> all, scheduler_->Schedules());
  ASSERT_THAT(all, SizeIs(1));
  EXPECT_EQ(all[0].record.spec, "@every 1m");
  EXPECT_EQ(all[0].next_run, Utc("2026-01-01 00:01:00"));

  clock_.Set(Utc("2026-01-01 00:00:20"));
  ASSERT_OK(other->Tick().status());
  EXPECT_THAT(other_log.Take(), IsEmpty());
  EXPECT_THAT(TickThrough(Utc("2026-01-01 00:01:30")),
              ElementsAre("s@2026-01-01T00:01:00Z"));
}

// A scheduler that did not store a schedule finds it at its next look at
// the store (the memory store sends no news; SQLite and Redis announce it).
TEST_F(ScheduleTest, SchedulesStoredElsewhereAreRun) {
  Start(Utc("2026-01-01 00:00:00"));
  std::unique_ptr<Scheduler> elsewhere = NewScheduler();
  ASSERT_OK(elsewhere->Schedule("e", "@every 5s", "t", ""));
  elsewhere.reset();
  clock_.Set(Utc("2026-01-01 00:00:05"));
  ASSERT_OK(scheduler_->Tick().status());
  EXPECT_THAT(log_.Take(), ElementsAre("e@2026-01-01T00:00:05Z"));
}

TEST_F(ScheduleTest, JitterDelaysEachJobByAFixedOffset) {
  Start(Utc("2026-01-01 00:00:00"));
  ScheduleOptions options;
  options.jitter = absl::Seconds(30);
  ASSERT_OK(scheduler_->Schedule("j", "* * * * *", "t", "", options));
  EXPECT_THAT(TickThrough(Utc("2026-01-01 00:01:00")),
              ElementsAre("j@2026-01-01T00:01:00Z"));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("j@2026-01-01T00:01:00Z"));
  const absl::Duration offset = job.run_at - Utc("2026-01-01 00:01:00");
  EXPECT_GE(offset, absl::ZeroDuration());
  EXPECT_LT(offset, absl::Seconds(30));
  // The offset is not 0 for this name and time (so the test shows one), and
  // the job becomes ready when it comes.
  ASSERT_GT(offset, absl::ZeroDuration());
  EXPECT_EQ(job.state, JobState::kDelayed);
  clock_.Set(job.run_at);
  ASSERT_OK(scheduler_->Tick().status());
  ASSERT_OK_AND_ASSIGN(std::optional<Lease> lease, scheduler_->Reserve("t"));
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->job.id, job.id);
}

TEST_F(ScheduleTest, UnscheduleStopsTheOccurrencesAndKeepsTheirJobs) {
  Start(Utc("2026-01-01 00:00:00"));
  ASSERT_OK(scheduler_->Schedule("u", "@every 1m", "t", ""));
  EXPECT_THAT(TickThrough(Utc("2026-01-01 00:01:30")), SizeIs(1));
  ASSERT_OK(scheduler_->Unschedule("u"));
  EXPECT_THAT(scheduler_->Unschedule("u"),
              StatusIs(absl::StatusCode::kNotFound));
  clock_.Set(Utc("2026-01-01 00:05:00"));
  ASSERT_OK(scheduler_->Tick().status());
  EXPECT_THAT(log_.Take(), IsEmpty());
  ASSERT_OK_AND_ASSIGN(TopicStats stats, scheduler_->Stats("t"));
  EXPECT_EQ(stats.ready, 1);
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleInfo> all, scheduler_->Schedules());
  EXPECT_THAT(all, IsEmpty());
}

TEST_F(ScheduleTest, SchedulesAreListedByNameWithTheirNextRun) {
  Start(Utc("2026-01-01 10:15:00"));
  ASSERT_OK(scheduler_->Schedule("b.hourly", "@hourly", "t", ""));
  ASSERT_OK(scheduler_->Schedule("a.daily", "0 3 * * *", "t", "",
                                 In("Europe/Berlin")));
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleInfo> all, scheduler_->Schedules());
  ASSERT_THAT(all, SizeIs(2));
  EXPECT_EQ(all[0].record.name, "a.daily");
  EXPECT_EQ(all[0].record.options.time_zone, "Europe/Berlin");
  EXPECT_EQ(all[0].next_run, Utc("2026-01-02 02:00:00"));
  EXPECT_EQ(all[1].record.name, "b.hourly");
  EXPECT_EQ(all[1].next_run, Utc("2026-01-01 11:00:00"));
}

TEST_F(ScheduleTest, BadSchedulesAreRefusedAndNameTheirFault) {
  Start(Utc("2026-01-01 00:00:00"));
  struct Bad {
    std::string name, spec, topic;
    ScheduleOptions options;
    std::string says;
  };
  ScheduleOptions with_id, zero_bound, long_jitter, bad_zone, no_ttr;
  with_id.job.id = "mine";
  zero_bound.missed = MissedPolicy::All(0);
  long_jitter.jitter = absl::Hours(2);
  bad_zone.time_zone = "Europe/Atlantis";
  no_ttr.job.ttr = absl::ZeroDuration();
  const std::vector<Bad> bad = {
      {"", "@daily", "t", {}, "schedule name"},
      {"a b", "@daily", "t", {}, "schedule name"},
      {std::string(151, 'n'), "@daily", "t", {}, "limit is 150"},
      {"n", "0 25 * * *", "t", {}, "hour field '25'"},
      {"n", "0 0 30 2 *", "t", {}, "never occurs"},
      {"n", "@daily", "bad topic", {}, "topic"},
      {"n", "@daily", "t", with_id, "cannot set id"},
      {"n", "@daily", "t", zero_bound, "all:0"},
      {"n", "@daily", "t", long_jitter, "jitter"},
      {"n", "@daily", "t", bad_zone, "Europe/Atlantis"},
      {"n", "@daily", "t", no_ttr, "ttr"},
  };
  for (const Bad& b : bad) {
    const absl::Status s =
        scheduler_->Schedule(b.name, b.spec, b.topic, "", b.options);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(b.says));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleInfo> all, scheduler_->Schedules());
  EXPECT_THAT(all, IsEmpty());
}

// A job that a caller enqueued by hand under an occurrence's id stands for
// that occurrence; the schedule goes on with the next.
TEST_F(ScheduleTest, AnOccurrenceWhoseIdIsTakenIsPassedOver) {
  Start(Utc("2026-01-01 00:00:00"));
  JobOptions by_hand;
  by_hand.id = "x@2026-01-01T00:01:00Z";
  ASSERT_OK(scheduler_->Enqueue("t", "mine", by_hand).status());
  log_.Take();
  ASSERT_OK(scheduler_->Schedule("x", "* * * * *", "t", "scheduled"));
  EXPECT_THAT(TickThrough(Utc("2026-01-01 00:02:00")),
              ElementsAre("x@2026-01-01T00:02:00Z"));
  ASSERT_OK_AND_ASSIGN(Job job, scheduler_->Get("x@2026-01-01T00:01:00Z"));
  EXPECT_EQ(job.payload, "mine");
}

}  // namespace
}  // namespace delayq
