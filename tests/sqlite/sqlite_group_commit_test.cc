// Copyright delayq authors.
//
// Group commit in the SQLite store (backends/sqlite/internal/group_commit.h):
// writes of several threads that share one transaction keep their own
// results, a failing one undoes only itself, a failed COMMIT fails and
// undoes the whole group, and a lone call on an idle store is a group of
// its own at once.
//
// To put several calls in one group for certain, another connection holds
// the file's write lock: the first caller leads a group that waits for the
// lock in BEGIN, the others queue behind it; once they all wait, the lock
// is let go, and the queued calls run as the next group.

#include <sqlite3.h>

#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/sqlite/internal/group_commit.h"
#include "delayq/sqlite_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/common/transition_counts.h"
#include "tests/testing/news_recorder.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

using ::delayq::sqlite_internal::GroupCommit;
using ::delayq::sqlite_internal::GroupCommitStateForTest;
using ::delayq::sqlite_internal::SetCommitHookForTest;
using ::delayq::testing::FreshDbPath;
using ::delayq::testing::NewsRecorder;
using ::delayq::testing::StatusIs;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

NewJob MakeJob(const std::string& id, const std::string& topic) {
  NewJob job;
  job.id = id;
  job.topic = topic;
  job.payload = "p-" + id;
  job.run_at = kNow;
  return job;
}

std::unique_ptr<Backend> MustOpen(const std::string& path) {
  SqliteOptions options;
  options.path = path;
  options.busy_timeout = absl::Minutes(5);
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenSqliteBackend(options);
  EXPECT_OK(backend);
  return backend.ok() ? *std::move(backend) : nullptr;
}

// The topic's counts over every minute the tests use.
JobCounts CountsOf(Backend& backend, const std::string& topic) {
  absl::StatusOr<std::vector<TopicMinute>> minutes =
      backend.Counts(kNow - absl::Hours(1), kNow + absl::Hours(1));
  EXPECT_OK(minutes);
  JobCounts sum;
  if (!minutes.ok()) return sum;
  for (const TopicMinute& m : *minutes) {
    if (m.topic == topic) sum += m.counts;
  }
  return sum;
}

// Another connection that holds the file's write lock.
class WriteLock {
 public:
  explicit WriteLock(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
  }
  ~WriteLock() { sqlite3_close(db_); }
  void Take() {
    ASSERT_EQ(sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr),
              SQLITE_OK);
  }
  void Let() {
    ASSERT_EQ(sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr),
              SQLITE_OK);
  }

 private:
  sqlite3* db_ = nullptr;
};

void AwaitState(Backend* backend, bool leading, size_t queued) {
  for (;;) {
    const GroupCommit::State s = GroupCommitStateForTest(backend);
    if (s.leading == leading && s.queued == queued) return;
    std::this_thread::yield();
  }
}

// Runs `calls` as one group, in the order given, each on a thread of its
// own, after a group of one (an Add() to topic "lead") that waits for the
// write lock. Returns the groups that ran meanwhile (2 when the calls
// shared one).
int64_t RunAsOneGroup(Backend* backend, const std::string& path,
                      const std::vector<std::function<void()>>& calls) {
  WriteLock lock(path);
  lock.Take();
  const int64_t groups_before = GroupCommitStateForTest(backend).groups;
  std::thread leader([&] {
    EXPECT_OK(backend->Add(
        {MakeJob(absl::StrCat("lead-", groups_before), "lead")}, kNow));
  });
  AwaitState(backend, /*leading=*/true, /*queued=*/0);
  std::vector<std::thread> threads;
  for (const std::function<void()>& call : calls) {
    // Each queues before the next starts: the group runs them in this order.
    threads.emplace_back(call);
    AwaitState(backend, /*leading=*/true, threads.size());
  }
  lock.Let();
  leader.join();
  for (std::thread& t : threads) t.join();
  return GroupCommitStateForTest(backend).groups - groups_before;
}

// Reserves every ready job of `topic`, by id.
std::map<std::string, Lease> ReserveAll(Backend& backend,
                                        const std::string& topic) {
  std::map<std::string, Lease> by_id;
  absl::StatusOr<std::vector<Lease>> leases = backend.Reserve(topic, 100, kNow);
  EXPECT_OK(leases);
  if (leases.ok()) {
    for (Lease& l : *leases) by_id[l.job.id] = std::move(l);
  }
  return by_id;
}

TEST(SqliteGroupCommitTest, FailingCallsLeaveTheirNeighboursInTheGroup) {
  const std::string path = FreshDbPath("group");
  std::unique_ptr<Backend> backend = MustOpen(path);
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add(
      {MakeJob("ack-me", "t"), MakeJob("stale", "t"), MakeJob("cancelled", "t"),
       MakeJob("fail-me", "t"), MakeJob("touch-me", "t")},
      kNow));
  std::map<std::string, Lease> lease = ReserveAll(*backend, "t");
  ASSERT_EQ(lease.size(), 5u);
  ASSERT_OK(backend->Cancel("cancelled", kNow));
  ASSERT_OK(backend->Add({MakeJob("dup", "t"), MakeJob("ready-1", "t")}, kNow));
  const JobCounts before = CountsOf(*backend, "t");

  const absl::Time later = kNow + absl::Seconds(10);
  absl::Status ack, stale_ack, cancelled_ack, dup_add, half_add, new_add, touch;
  absl::StatusOr<FailOutcome> fail;
  absl::StatusOr<std::vector<Lease>> reserved;
  absl::StatusOr<absl::Time> touched;
  const int64_t groups = RunAsOneGroup(
      backend.get(), path,
      {
          [&] {
            ack = backend->Ack("ack-me", lease["ack-me"].token, "", later);
          },
          [&] {
            stale_ack =
                backend->Ack("stale", lease["stale"].token + 1, "", later);
          },
          [&] {
            cancelled_ack =
                backend->Ack("cancelled", lease["cancelled"].token, "", later);
          },
          [&] { dup_add = backend->Add({MakeJob("dup", "t")}, later); },
          // The first job of this Add goes in, then the second fails: the
          // first must not stay.
          [&] {
            half_add = backend->Add(
                {MakeJob("new-2", "t"), MakeJob("dup", "t")}, later);
          },
          [&] { new_add = backend->Add({MakeJob("new-1", "t")}, later); },
          [&] {
            fail = backend->Fail("fail-me", lease["fail-me"].token, "boom",
                                 later, later);
          },
          [&] {
            touched =
                backend->Touch("touch-me", lease["touch-me"].token, later);
          },
          [&] { reserved = backend->Reserve("t", 1, later); },
      });
  EXPECT_EQ(groups, 2) << "the calls did not share one transaction";

  EXPECT_OK(ack);
  EXPECT_THAT(stale_ack, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(cancelled_ack, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(dup_add, StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(half_add, StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_OK(new_add);
  ASSERT_OK(fail);
  EXPECT_EQ(*fail, FailOutcome::kRetry);
  ASSERT_OK(touched);
  EXPECT_EQ(*touched, later + absl::Seconds(60));
  ASSERT_OK(reserved);
  EXPECT_EQ(reserved->size(), 1u);

  EXPECT_THAT(backend->Get("ack-me"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(backend->Get("new-2"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_OK(backend->Get("new-1"));
  ASSERT_OK_AND_ASSIGN(Job stale, backend->Get("stale"));
  EXPECT_EQ(stale.state, JobState::kReserved);
  ASSERT_OK_AND_ASSIGN(Job failed, backend->Get("fail-me"));
  EXPECT_EQ(failed.last_error, "boom");
  ASSERT_OK_AND_ASSIGN(Job dup, backend->Get("dup"));
  EXPECT_EQ(dup.enqueued_at, kNow);
  // The stale lease is still refused, and the right one still acks.
  EXPECT_OK(backend->Ack("stale", lease["stale"].token, "", later));

  // Counted once each, and only what happened.
  const JobCounts after = CountsOf(*backend, "t");
  EXPECT_EQ(after.enqueued - before.enqueued, 1);  // new-1
  EXPECT_EQ(after.done - before.done, 2);          // ack-me, stale (above)
  EXPECT_EQ(after.failed - before.failed, 1);
  EXPECT_EQ(after.retried - before.retried, 1);
  EXPECT_EQ(after.delivered() - before.delivered(), 1);
}

// The sizes of reservations that each succeeded.
std::vector<size_t> SizesOf(
    const std::vector<absl::StatusOr<std::vector<Lease>>>& reserved) {
  std::vector<size_t> sizes;
  for (const absl::StatusOr<std::vector<Lease>>& r : reserved) {
    EXPECT_OK(r);
    sizes.push_back(r.ok() ? r->size() : 0);
  }
  return sizes;
}

// A pause or a limit set by a call of a group holds for the group's later
// reservations of the topic, and lifting it lets them in again: what a
// reservation of the group read of the topic before does not carry over.
TEST(SqliteGroupCommitTest, PauseAndLimitSetInAGroupHoldForItsLaterCalls) {
  const std::string path = FreshDbPath("group");
  std::unique_ptr<Backend> backend = MustOpen(path);
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({MakeJob("a", "t"), MakeJob("b", "t"),
                          MakeJob("c", "t"), MakeJob("d", "t")},
                         kNow));
  TopicLimit cap;
  cap.concurrency = 2;
  std::vector<absl::StatusOr<std::vector<Lease>>> reserved(5);
  absl::Status pause, resume, limit, clear;
  const int64_t groups =
      RunAsOneGroup(backend.get(), path,
                    {
                        [&] { reserved[0] = backend->Reserve("t", 1, kNow); },
                        [&] { pause = backend->SetPaused("t", true, kNow); },
                        [&] { reserved[1] = backend->Reserve("t", 1, kNow); },
                        [&] { resume = backend->SetPaused("t", false, kNow); },
                        [&] { reserved[2] = backend->Reserve("t", 1, kNow); },
                        [&] { limit = backend->SetLimit("t", cap, kNow); },
                        // Two of the topic's jobs are reserved: the cap holds.
                        [&] { reserved[3] = backend->Reserve("t", 1, kNow); },
                        [&] { clear = backend->ClearLimit("t", kNow); },
                        [&] { reserved[4] = backend->Reserve("t", 1, kNow); },
                    });
  EXPECT_EQ(groups, 2) << "the calls did not share one transaction";
  EXPECT_OK(pause);
  EXPECT_OK(resume);
  EXPECT_OK(limit);
  EXPECT_OK(clear);
  EXPECT_THAT(SizesOf(reserved), ::testing::ElementsAre(1, 0, 1, 0, 1));
}

// Reservations of one topic in one group, with fewer ready jobs than
// callers and a failing call (undone) among them: each caller gets its own
// answer, no job twice; a limit reached in the group holds the rest back.
TEST(SqliteGroupCommitTest, ReservationsOfATopicInAGroupEachGetTheirOwn) {
  const std::string path = FreshDbPath("group");
  std::unique_ptr<Backend> backend = MustOpen(path);
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add(
      {MakeJob("a", "free"), MakeJob("b", "free"), MakeJob("c", "capped"),
       MakeJob("d", "capped"), MakeJob("e", "capped")},
      kNow));
  TopicLimit cap;
  cap.concurrency = 2;
  ASSERT_OK(backend->SetLimit("capped", cap, kNow));
  std::vector<absl::StatusOr<std::vector<Lease>>> free(4), capped(3);
  absl::Status stale;
  const int64_t groups = RunAsOneGroup(
      backend.get(), path,
      {
          [&] { free[0] = backend->Reserve("free", 1, kNow); },
          [&] { capped[0] = backend->Reserve("capped", 1, kNow); },
          [&] { stale = backend->Ack("a", 12345, "", kNow); },
          [&] { free[1] = backend->Reserve("free", 1, kNow); },
          [&] { capped[1] = backend->Reserve("capped", 1, kNow); },
          [&] { free[2] = backend->Reserve("free", 1, kNow); },
          [&] { capped[2] = backend->Reserve("capped", 1, kNow); },
          [&] { free[3] = backend->Reserve("free", 1, kNow); },
      });
  EXPECT_EQ(groups, 2) << "the calls did not share one transaction";
  EXPECT_THAT(stale, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(SizesOf(free), ::testing::ElementsAre(1, 1, 0, 0));
  EXPECT_THAT(SizesOf(capped), ::testing::ElementsAre(1, 1, 0));
  std::set<std::string> ids;
  for (const auto* calls : {&free, &capped}) {
    for (const absl::StatusOr<std::vector<Lease>>& r : *calls) {
      if (!r.ok()) continue;
      for (const Lease& l : *r) EXPECT_TRUE(ids.insert(l.job.id).second);
    }
  }
  EXPECT_THAT(ids, ::testing::ElementsAre("a", "b", "c", "d"));
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("capped"));
  EXPECT_EQ(stats.reserved, 2);
  EXPECT_EQ(stats.ready, 1);
}

// The news of a group is what its calls together changed, once the group
// committed; a call that failed announces nothing.
TEST(SqliteGroupCommitTest, GroupAnnouncesWhatItsCallsChanged) {
  const std::string path = FreshDbPath("group");
  std::unique_ptr<Backend> backend = MustOpen(path);
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({MakeJob("dup", "other")}, kNow));
  NewsRecorder news(kNow);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NewsSubscription> subscription,
                       backend->Subscribe(news.Callback()));
  // A new subscriber first hears the horizon, if any: none here. Learn
  // that the subscription is live from news of its own.
  ASSERT_OK(backend->Add({MakeJob("hello", "hello")}, kNow));
  while (news.Next() != NewsRecorder::Ready("hello")) {
  }
  absl::Status two, one, failed;
  absl::StatusOr<std::vector<Lease>> reserved;
  ASSERT_EQ(RunAsOneGroup(
                backend.get(), path,
                {
                    [&] {
                      two = backend->Add(
                          {MakeJob("n1", "n"), MakeJob("n2", "n")}, kNow);
                    },
                    [&] { one = backend->Add({MakeJob("m1", "m")}, kNow); },
                    [&] {
                      failed = backend->Add(
                          {MakeJob("z1", "z"), MakeJob("dup", "other")}, kNow);
                    },
                    [&] { reserved = backend->Reserve("n", 1, kNow); },
                }),
            2);
  ASSERT_OK(two);
  ASSERT_OK(one);
  ASSERT_THAT(failed, StatusIs(absl::StatusCode::kAlreadyExists));
  ASSERT_OK(reserved);
  // Whatever the order of the calls in the group, n and m went from empty
  // to ready (the reserve may have run before the adds, or taken one of
  // two), and a lease's deadline is the store's next due time. The
  // leader's news about "lead" comes first; z has no job.
  std::set<std::string> want = {NewsRecorder::Ready("lead"),
                                NewsRecorder::Ready("n"),
                                NewsRecorder::Ready("m")};
  if (!reserved->empty()) want.insert(NewsRecorder::Due(absl::Minutes(1)));
  ASSERT_OK(backend->Add({MakeJob("end", "end")}, kNow));
  std::set<std::string> heard;
  for (std::string n = news.Next(); n != NewsRecorder::Ready("end");
       n = news.Next()) {
    ASSERT_NE(n, "") << "the news stopped";
    heard.insert(n);
  }
  EXPECT_EQ(heard, want);
}

NewJob JobAfter(const std::string& id, const std::string& dependency) {
  NewJob job = MakeJob(id, "t");
  job.after = {dependency};
  return job;
}

// A write transaction looks once whether any job waits for another, and
// skips the dependants' settling when none does; a call of the same
// transaction that makes a job wait after that look counts as well.
TEST(SqliteGroupCommitTest, AJobMadeToWaitInTheGroupIsSettledInIt) {
  const std::string path = FreshDbPath("group");
  std::unique_ptr<Backend> backend = MustOpen(path);
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({MakeJob("x", "t"), MakeJob("z", "t")}, kNow));
  std::map<std::string, Lease> lease = ReserveAll(*backend, "t");
  ASSERT_EQ(lease.size(), 2u);
  absl::Status ack_z, add_y, ack_x;
  ASSERT_EQ(
      RunAsOneGroup(
          backend.get(), path,
          {
              // No job waits yet: this ack looks, and finds none.
              [&] { ack_z = backend->Ack("z", lease["z"].token, "", kNow); },
              [&] { add_y = backend->Add({JobAfter("y", "x")}, kNow); },
              [&] { ack_x = backend->Ack("x", lease["x"].token, "", kNow); },
          }),
      2);
  ASSERT_OK(ack_z);
  ASSERT_OK(add_y);
  ASSERT_OK(ack_x);
  ASSERT_OK_AND_ASSIGN(Job y, backend->Get("y"));
  EXPECT_EQ(y.state, JobState::kReady);
}

// What a transaction found is not taken for the next one: another
// connection may have made a job wait in between.
TEST(SqliteGroupCommitTest, AJobMadeToWaitByAnotherConnectionIsSettled) {
  const std::string path = FreshDbPath("group");
  std::unique_ptr<Backend> acker = MustOpen(path);
  std::unique_ptr<Backend> adder = MustOpen(path);
  ASSERT_NE(acker, nullptr);
  ASSERT_NE(adder, nullptr);
  ASSERT_OK(acker->Add({MakeJob("x", "t"), MakeJob("z", "t")}, kNow));
  std::map<std::string, Lease> lease = ReserveAll(*acker, "t");
  ASSERT_EQ(lease.size(), 2u);
  // Looks, and finds no job that waits.
  ASSERT_OK(acker->Ack("z", lease["z"].token, "", kNow));
  ASSERT_OK(adder->Add({JobAfter("y", "x")}, kNow));
  ASSERT_OK_AND_ASSIGN(Job waiting, acker->Get("y"));
  ASSERT_EQ(waiting.state, JobState::kWaiting);
  ASSERT_OK(acker->Ack("x", lease["x"].token, "", kNow));
  ASSERT_OK_AND_ASSIGN(Job y, acker->Get("y"));
  EXPECT_EQ(y.state, JobState::kReady);
}

// Fails every COMMIT after the first it sees.
int FailAfterFirstCommit(void* arg) {
  return static_cast<std::atomic<int>*>(arg)->fetch_add(1) > 0 ? 1 : 0;
}

TEST(SqliteGroupCommitTest, FailedCommitFailsTheWholeGroupAndKeepsNothing) {
  const std::string path = FreshDbPath("group");
  std::unique_ptr<Backend> backend = MustOpen(path);
  ASSERT_NE(backend, nullptr);
  ASSERT_OK(backend->Add({MakeJob("a", "t"), MakeJob("b", "t")}, kNow));
  std::map<std::string, Lease> lease = ReserveAll(*backend, "t");
  ASSERT_EQ(lease.size(), 2u);
  ASSERT_OK(backend->Add({MakeJob("c", "t")}, kNow));
  const JobCounts before = CountsOf(*backend, "t");

  std::atomic<int> commits{0};
  SetCommitHookForTest(backend.get(), &FailAfterFirstCommit, &commits);
  absl::Status ack, stale_ack, add;
  absl::StatusOr<std::vector<Lease>> reserved;
  const int64_t groups = RunAsOneGroup(
      backend.get(), path,
      {
          [&] { ack = backend->Ack("a", lease["a"].token, "", kNow); },
          [&] {
            stale_ack = backend->Ack("b", lease["b"].token + 1, "", kNow);
          },
          [&] { add = backend->Add({MakeJob("new", "t")}, kNow); },
          [&] { reserved = backend->Reserve("t", 1, kNow); },
      });
  SetCommitHookForTest(backend.get(), nullptr, nullptr);
  EXPECT_EQ(groups, 2);
  EXPECT_EQ(commits.load(), 2);  // the leader's, then the group's

  // Every caller gets the COMMIT's error, whatever its own outcome was.
  EXPECT_FALSE(ack.ok());
  EXPECT_EQ(stale_ack, ack);
  EXPECT_EQ(add, ack);
  EXPECT_EQ(reserved.status(), ack);

  // Nothing of the group stays.
  EXPECT_THAT(backend->Get("new"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(Job c, backend->Get("c"));
  EXPECT_EQ(c.state, JobState::kReady);
  ASSERT_OK_AND_ASSIGN(Job a, backend->Get("a"));
  EXPECT_EQ(a.state, JobState::kReserved);
  const JobCounts after = CountsOf(*backend, "t");
  EXPECT_EQ(after.enqueued, before.enqueued);
  EXPECT_EQ(after.done, before.done);
  EXPECT_EQ(after.delivered(), before.delivered());
  // The store works on: the leases still hold.
  EXPECT_OK(backend->Ack("a", lease["a"].token, "", kNow));
  EXPECT_OK(backend->Ack("b", lease["b"].token, "", kNow));
  EXPECT_EQ(CountsOf(*backend, "t").done, before.done + 2);
}

TEST(SqliteGroupCommitTest, LoneCallOnAnIdleStoreIsAGroupOfItsOwn) {
  const std::string path = FreshDbPath("group");
  std::unique_ptr<Backend> backend = MustOpen(path);
  ASSERT_NE(backend, nullptr);
  const GroupCommit::State before = GroupCommitStateForTest(backend.get());
  ASSERT_OK(backend->Add({MakeJob("x", "t")}, kNow));
  const GroupCommit::State after = GroupCommitStateForTest(backend.get());
  // Done when the call returned: one group, of this call alone, and no
  // group running or caller waiting.
  EXPECT_EQ(after.groups - before.groups, 1);
  EXPECT_EQ(after.ops - before.ops, 1);
  EXPECT_FALSE(after.leading);
  EXPECT_EQ(after.queued, 0u);
}

// A look for due jobs that finds none is a read: it takes no place in a
// group (most of the timer's looks, while busy workers promote their own
// topic). One that finds a due job, or a done job whose time is up, writes.
TEST(SqliteGroupCommitTest, APromotionWithNothingDueWritesNothing) {
  const std::string path = FreshDbPath("group");
  std::unique_ptr<Backend> backend = MustOpen(path);
  ASSERT_NE(backend, nullptr);
  NewJob later = MakeJob("later", "t");
  later.run_at = kNow + absl::Seconds(10);
  NewJob kept = MakeJob("kept", "t");
  kept.keep_for = absl::Seconds(20);
  kept.keep_at_most = 10;
  ASSERT_OK(backend->Add({later, kept}, kNow));
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend->Reserve("t", 1, kNow));
  ASSERT_EQ(leases.size(), 1u);
  ASSERT_OK(backend->Ack("kept", leases[0].token, "", kNow));
  ASSERT_OK(backend->Get("kept"));

  const GroupCommit::State before = GroupCommitStateForTest(backend.get());
  ASSERT_OK_AND_ASSIGN(PromoteResult nothing,
                       backend->PromoteDue(kNow + absl::Seconds(5), 100));
  EXPECT_TRUE(nothing.transitions.empty());
  EXPECT_EQ(GroupCommitStateForTest(backend.get()).groups, before.groups);

  ASSERT_OK_AND_ASSIGN(PromoteResult due,
                       backend->PromoteDue(kNow + absl::Seconds(10), 100));
  EXPECT_EQ(due.transitions.size(), 1u);
  EXPECT_EQ(GroupCommitStateForTest(backend.get()).groups, before.groups + 1);

  // The done job's time is up: it leaves, in a write.
  ASSERT_OK(backend->PromoteDue(kNow + absl::Seconds(20), 100));
  EXPECT_EQ(GroupCommitStateForTest(backend.get()).groups, before.groups + 2);
  EXPECT_THAT(backend->Get("kept"), StatusIs(absl::StatusCode::kNotFound));
}

// Threads that add (and add a live id again), reserve, ack (with the wrong
// token first) and cancel at once: every job leaves exactly once, by ack or
// cancel, and the counts say so.
TEST(SqliteGroupCommitTest, ManyThreadsOfMixedCallsLoseAndRepeatNothing) {
  constexpr int kThreads = 8;
  constexpr int kJobsPerThread = 60;
  const std::string path = FreshDbPath("group");
  std::unique_ptr<Backend> backend = MustOpen(path);
  ASSERT_NE(backend, nullptr);
  std::atomic<int> added{0}, acked{0}, cancelled{0}, unexpected{0};
  std::vector<std::set<std::string>> acked_ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto expect = [&](bool ok) {
        if (!ok) unexpected.fetch_add(1);
      };
      // A job of a topic nobody reserves, whose id stays taken.
      const NewJob kept = MakeJob(absl::StrCat("kept-", t), "kept");
      expect(backend->Add({kept}, kNow).ok());
      for (int i = 0; i < kJobsPerThread; ++i) {
        const std::string id = absl::StrCat("j-", t, "-", i);
        expect(backend->Add({MakeJob(id, "s")}, kNow).ok());
        added.fetch_add(1);
        expect(absl::IsAlreadyExists(backend->Add({kept}, kNow)));
        absl::StatusOr<std::vector<Lease>> got = backend->Reserve("s", 1, kNow);
        expect(got.ok());
        if (!got.ok() || got->empty()) continue;
        const Lease& l = got->front();
        if (i % 5 == 0) {
          // Cancelled while reserved: its lease is refused.
          expect(backend->Cancel(l.job.id, kNow).ok());
          cancelled.fetch_add(1);
          expect(absl::IsFailedPrecondition(
              backend->Ack(l.job.id, l.token, "", kNow)));
          continue;
        }
        expect(absl::IsFailedPrecondition(
            backend->Ack(l.job.id, l.token + 1, "", kNow)));
        expect(backend->Ack(l.job.id, l.token, "", kNow).ok());
        acked.fetch_add(1);
        acked_ids[t].insert(l.job.id);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(unexpected.load(), 0);
  // What is left is drained here.
  for (;;) {
    ASSERT_OK_AND_ASSIGN(std::vector<Lease> left,
                         backend->Reserve("s", 100, kNow));
    if (left.empty()) break;
    for (const Lease& l : left) {
      ASSERT_OK(backend->Ack(l.job.id, l.token, "", kNow));
      acked.fetch_add(1);
      acked_ids[0].insert(l.job.id);
    }
  }
  std::set<std::string> all;
  size_t total = 0;
  for (const auto& ids : acked_ids) {
    total += ids.size();
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), total) << "a job was acked twice";
  EXPECT_EQ(acked.load() + cancelled.load(), added.load());
  const JobCounts counts = CountsOf(*backend, "s");
  EXPECT_EQ(counts.enqueued, added.load());
  EXPECT_EQ(counts.done, acked.load());
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("s"));
  EXPECT_EQ(stats.ready + stats.reserved + stats.delayed, 0);
  // They did share transactions (the test is no use otherwise).
  const GroupCommit::State s = GroupCommitStateForTest(backend.get());
  EXPECT_LT(s.groups, s.ops);
}

}  // namespace
}  // namespace delayq
