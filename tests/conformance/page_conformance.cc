// Copyright delayq authors.
//
// Conformance tests of ListPage(): pages of every state's list, in List()'s
// order, while jobs come and go, and the refusal of cursors a list did not
// give. See backend_conformance.h.
//
// The jobs' ids share no hash tag, so a store that spreads a topic's jobs
// over parts (a sharded Redis namespace) pages across all of them.

#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

constexpr JobState kStates[] = {JobState::kReady, JobState::kDelayed,
                                JobState::kReserved, JobState::kDead,
                                JobState::kDone};

// Puts `n` jobs of `topic` in `state`, with keys that often tie (equal
// priorities, run_ats, deadlines and times to leave), so that pages must
// go on from the middle of a run of equal keys.
void Fill(Backend& backend, const std::string& topic, JobState state, int n,
          const std::string& prefix = "j") {
  std::vector<NewJob> jobs;
  for (int i = 0; i < n; ++i) {
    NewJob job;
    job.id = absl::StrCat(prefix, i);
    job.topic = topic;
    job.payload = "payload of " + job.id;
    job.run_at = kT0 - absl::Seconds(i % 4);
    job.priority = i % 3;
    job.ttr = absl::Seconds(10 * (1 + i % 4));
    if (state == JobState::kDelayed)
      job.run_at = kT0 + absl::Seconds(1 + i % 5);
    if (state == JobState::kDead) job.max_attempts = 1;
    if (state == JobState::kDone) {
      job.keep_for = absl::Hours(1 + i % 3);
      job.keep_at_most = 1000;
    }
    jobs.push_back(std::move(job));
  }
  ASSERT_OK(backend.Add(jobs, kT0));
  if (state == JobState::kReady || state == JobState::kDelayed) return;
  ASSERT_OK_AND_ASSIGN(std::vector<Lease> leases,
                       backend.Reserve(topic, n, kT0));
  ASSERT_EQ(leases.size(), static_cast<size_t>(n));
  for (const Lease& l : leases) {
    if (state == JobState::kDead) {
      ASSERT_OK(backend.Fail(l.job.id, l.token, "died", kT0, kT0).status());
    } else if (state == JobState::kDone) {
      ASSERT_OK(backend.Ack(l.job.id, l.token, "r", kT0));
    }
  }
}

// Pages through the list with page sizes drawn from `sizes` (1..7),
// calling `between` after each page; returns the ids seen, in order.
std::vector<std::string> PageThrough(
    Backend& backend, const std::string& topic, JobState state,
    std::mt19937* sizes, const std::function<void()>& between = [] {}) {
  std::vector<std::string> seen;
  std::string cursor;
  for (int pages = 0; pages < 1000; ++pages) {
    const int limit = std::uniform_int_distribution<int>(1, 7)(*sizes);
    absl::StatusOr<JobPage> page =
        backend.ListPage(topic, state, limit, cursor);
    EXPECT_OK(page.status());
    if (!page.ok()) break;
    EXPECT_LE(page->jobs.size(), static_cast<size_t>(limit));
    for (const Job& j : page->jobs) {
      EXPECT_EQ(j.state, state) << j.id;
      seen.push_back(j.id);
    }
    if (page->next_cursor.empty()) break;
    EXPECT_EQ(page->jobs.size(), static_cast<size_t>(limit))
        << "a page short of its limit is the last";
    cursor = page->next_cursor;
    between();
  }
  return seen;
}

TEST_P(BackendConformanceTest, ListPagePagesOfEveryStateMakeUpItsList) {
  std::mt19937 sizes(7);
  for (JobState state : kStates) {
    SCOPED_TRACE(JobStateName(state));
    const std::string topic = Topic(JobStateName(state));
    Fill(*backend_, topic, state, 40, std::string(JobStateName(state)));
    ASSERT_OK_AND_ASSIGN(std::vector<Job> whole,
                         backend_->List(topic, state, 1000));
    ASSERT_EQ(whole.size(), 40u);
    EXPECT_THAT(PageThrough(*backend_, topic, state, &sizes),
                ElementsAreArray(Ids(whole)));
  }
}

TEST_P(BackendConformanceTest, ListPageAPageThatEndsTheListHasNoCursor) {
  const std::string topic = Topic();
  Fill(*backend_, topic, JobState::kReady, 3);
  ASSERT_OK_AND_ASSIGN(JobPage page,
                       backend_->ListPage(topic, JobState::kReady, 3, ""));
  EXPECT_EQ(page.jobs.size(), 3u);
  EXPECT_EQ(page.next_cursor, "");
  ASSERT_OK_AND_ASSIGN(page,
                       backend_->ListPage(topic, JobState::kReady, 2, ""));
  ASSERT_EQ(page.jobs.size(), 2u);
  ASSERT_NE(page.next_cursor, "");
  ASSERT_OK_AND_ASSIGN(
      page, backend_->ListPage(topic, JobState::kReady, 2, page.next_cursor));
  EXPECT_EQ(page.jobs.size(), 1u);
  EXPECT_EQ(page.next_cursor, "");
  ASSERT_OK_AND_ASSIGN(
      page, backend_->ListPage(Topic("empty"), JobState::kDead, 5, ""));
  EXPECT_THAT(page.jobs, IsEmpty());
  EXPECT_EQ(page.next_cursor, "");
}

// Jobs added (before and after the place reached) and cancelled between
// pages: every job there from the first page to the last is seen once.
TEST_P(BackendConformanceTest,
       ListPageJobsPresentThroughoutAreSeenExactlyOnce) {
  for (JobState state : {JobState::kReady, JobState::kDelayed}) {
    SCOPED_TRACE(JobStateName(state));
    const std::string topic = Topic(JobStateName(state));
    Fill(*backend_, topic, state, 30,
         absl::StrCat(JobStateName(state), "stay"));
    Fill(*backend_, topic, state, 12,
         absl::StrCat(JobStateName(state), "gone"));
    std::mt19937 sizes(11);
    int round = 0;
    const std::vector<std::string> seen =
        PageThrough(*backend_, topic, state, &sizes, [&] {
          if (round < 12) {
            ASSERT_OK(backend_->Cancel(
                absl::StrCat(JobStateName(state), "gone", round), kT0));
          }
          Fill(*backend_, topic, state, 2,
               absl::StrCat(JobStateName(state), "new", round, "-"));
          ++round;
        });
    std::map<std::string, int> times;
    for (const std::string& id : seen) ++times[id];
    for (int i = 0; i < 30; ++i) {
      const std::string id = absl::StrCat(JobStateName(state), "stay", i);
      EXPECT_EQ(times[id], 1) << id;
    }
    for (const auto& [id, n] : times) EXPECT_EQ(n, 1) << id;
  }
}

TEST_P(BackendConformanceTest, ListPageRefusesCursorsItDidNotGive) {
  const std::string topic = Topic();
  Fill(*backend_, topic, JobState::kReady, 4);
  ASSERT_OK_AND_ASSIGN(JobPage page,
                       backend_->ListPage(topic, JobState::kReady, 1, ""));
  ASSERT_NE(page.next_cursor, "");
  const std::string good = page.next_cursor;
  for (const std::string& bad :
       {std::string("x"), std::string("not a cursor"), std::string("%%%"),
        good.substr(0, good.size() - 2), good + "AAAA", std::string(20000, 'A'),
        std::string("MQ"), std::string("MTU6cmVhZHk")}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(backend_->ListPage(topic, JobState::kReady, 2, bad).status(),
                StatusIs(absl::StatusCode::kInvalidArgument));
  }
  // A cursor of the ready list does not go on with the dead one.
  EXPECT_THAT(backend_->ListPage(topic, JobState::kDead, 2, good).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_OK_AND_ASSIGN(page,
                       backend_->ListPage(topic, JobState::kReady, 5, good));
  EXPECT_EQ(page.jobs.size(), 3u);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
