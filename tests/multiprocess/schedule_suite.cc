// Copyright delayq authors.
//
// Periodic schedules with several processes: three workers run the same
// schedule, every second, on one store; each occurrence is enqueued once
// and handled once.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "tests/multiprocess/multiprocess_suite.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace testing {
namespace {

// Every "got" id of `workers`, with how many times each was handled.
std::map<std::string, int> Handled(const std::vector<WorkerProcess*>& workers) {
  std::map<std::string, int> handled;
  for (const WorkerProcess* w : workers) {
    for (const Delivery& d : Deliveries(w->lines())) {
      if (d.event == "got") ++handled[d.id];
    }
  }
  return handled;
}

// The occurrence an id names, as seconds since the epoch.
int64_t SecondOf(const std::string& id) {
  absl::Time t;
  std::string err;
  const size_t at = id.find('@');
  EXPECT_NE(at, std::string::npos) << id;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, id.substr(at + 1), &t, &err))
      << id << ": " << err;
  return absl::ToUnixSeconds(t);
}

// Each worker stores the schedule (as every process of a deployment does
// at its start), handles its topic and runs its timer thread. The missed
// policy runs every occurrence, however late a process is to find it, so
// the occurrences from the first to the last form an unbroken run of
// seconds, and any duplicate or gap is the store's doing, not timing's.
TEST_P(MultiProcessTest, ThreeProcessesRunEachOccurrenceOfAScheduleOnce) {
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  std::vector<WorkerProcess*> all;
  for (int w = 0; w < 3; ++w) {
    workers.push_back(StartWorker());
    ASSERT_NE(workers.back(), nullptr);
    all.push_back(workers.back().get());
    ASSERT_OK(all.back()->Run("handle beat threads=2"));
    ASSERT_OK(all.back()->Run("schedule beat beat @every 1s missed=all:1000"));
    ASSERT_OK(all.back()->Run("start"));
  }
  constexpr size_t kOccurrences = 5;
  ASSERT_TRUE(CollectUntil(
      all, [&] { return Handled(all).size() >= kOccurrences; },
      absl::Seconds(60)))
      << "fewer than " << kOccurrences << " occurrences were handled";
  for (WorkerProcess* w : all) {
    EXPECT_TRUE(ExitedCleanly(w->Finish()));
    EXPECT_THAT(Errors(*w), ::testing::IsEmpty());
  }

  const std::map<std::string, int> handled = Handled(all);
  std::set<int64_t> seconds;
  for (const auto& [id, times] : handled) {
    EXPECT_EQ(times, 1) << id << " was handled " << times << " times";
    EXPECT_TRUE(absl::StartsWith(id, "beat@")) << id;
    seconds.insert(SecondOf(id));
  }
  // Enqueued but not handled before the workers stopped: still stored.
  std::unique_ptr<Backend> store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_OK_AND_ASSIGN(std::vector<Job> left,
                       store->List("beat", JobState::kReady, 1000));
  for (const Job& job : left) {
    EXPECT_EQ(handled.count(job.id), 0u) << job.id << " handled and stored";
    seconds.insert(SecondOf(job.id));
  }
  ASSERT_GE(seconds.size(), kOccurrences);
  EXPECT_EQ(*seconds.rbegin() - *seconds.begin() + 1,
            static_cast<int64_t>(seconds.size()))
      << "the occurrences are not one per second from the first to the last";
  ASSERT_OK_AND_ASSIGN(std::vector<ScheduleRecord> schedules,
                       store->ListSchedules());
  ASSERT_EQ(schedules.size(), 1u);
  EXPECT_EQ(absl::ToUnixSeconds(schedules[0].done_through), *seconds.rbegin());
}

}  // namespace
}  // namespace testing
}  // namespace delayq
