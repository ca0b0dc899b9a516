// Copyright delayq authors.
//
// CalendarQueue: unit tests of its tiers, and a randomized run against a
// reference model (a std::set ordered by run_at, then enqueue order). The
// seed is printed; set DELAYQ_CALENDAR_SEED to replay one run.

#include "backends/memory/calendar_queue.h"

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "delayq/backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace delayq {
namespace memory_internal {
namespace {

using ::testing::ElementsAreArray;

constexpr int64_t kBucket = int64_t{1} << CalendarQueue::kBucketBits;
const int64_t kStart = absl::ToUnixMicros(absl::FromUnixSeconds(1'800'000'000));

// Records made the way the store makes them: the enqueue order is `seq`.
class Records {
 public:
  JobRecord* Make(int64_t run_at) {
    NewJob job;
    job.id = "job";
    job.run_at = absl::FromUnixMicros(run_at);
    owned_.push_back(JobRecord::Make(job, /*topic=*/nullptr, next_seq_++,
                                     absl::FromUnixMicros(kStart - 1)));
    return owned_.back().get();
  }

 private:
  std::vector<JobRecord::Ptr> owned_;
  uint64_t next_seq_ = 1;
};

std::vector<const JobRecord*> InOrder(const CalendarQueue& queue) {
  std::vector<const JobRecord*> out;
  queue.ForEachInOrder([&](const JobRecord* r) {
    out.push_back(r);
    return true;
  });
  return out;
}

TEST(CalendarQueueTest, FrontIsTheEarliestWhateverTheInsertOrder) {
  Records records;
  CalendarQueue queue;
  JobRecord* late = records.Make(kStart + 100 * kBucket);
  JobRecord* early = records.Make(kStart + 3);
  JobRecord* middle = records.Make(kStart + 7 * kBucket + 5);
  for (JobRecord* r : {late, early, middle}) queue.Insert(r);
  EXPECT_EQ(queue.size(), 3u);
  EXPECT_EQ(queue.front().record, early);
  EXPECT_THAT(InOrder(queue), ElementsAreArray({early, middle, late}));
}

TEST(CalendarQueueTest, EqualTimesKeepEnqueueOrderInBothTiers) {
  Records records;
  CalendarQueue queue;
  std::vector<const JobRecord*> made;
  for (int i = 0; i < 5; ++i) made.push_back(records.Make(kStart + kBucket));
  // Inserted backwards: the bucket does not keep order, the sort does.
  for (int i = 4; i >= 0; --i) queue.Insert(const_cast<JobRecord*>(made[i]));
  EXPECT_EQ(queue.front().record, made[0]);
  EXPECT_THAT(InOrder(queue), ElementsAreArray(made));
  // Taking the first sorts the bucket into near; the rest follow in order.
  std::vector<const JobRecord*> taken;
  while (!queue.empty()) {
    taken.push_back(queue.front().record);
    queue.Erase(queue.front().record);
  }
  EXPECT_THAT(taken, ElementsAreArray(made));
}

TEST(CalendarQueueTest, EarlierJobsJoinTheBucketBeingTakenFrom) {
  Records records;
  CalendarQueue queue;
  JobRecord* a = records.Make(kStart + 10);
  JobRecord* b = records.Make(kStart + 20);
  JobRecord* far = records.Make(kStart + 50 * kBucket);
  for (JobRecord* r : {a, b, far}) queue.Insert(r);
  queue.Erase(a);  // b's bucket is now being taken from
  // Due before b, in an earlier bucket and in b's: both come first.
  JobRecord* before = records.Make(kStart - 3 * kBucket);
  JobRecord* beside = records.Make(kStart + 15);
  queue.Insert(before);
  queue.Insert(beside);
  EXPECT_EQ(queue.front().record, before);
  EXPECT_THAT(InOrder(queue), ElementsAreArray({before, beside, b, far}));
}

TEST(CalendarQueueTest, CancellingABucketsEarliestFindsTheNext) {
  Records records;
  CalendarQueue queue;
  std::vector<JobRecord*> made;
  for (int64_t at : {40, 10, 30, 20}) {
    made.push_back(records.Make(kStart + 5 * kBucket + at));
    queue.Insert(made.back());
  }
  JobRecord* before = records.Make(kStart + 1);
  queue.Insert(before);
  // The later bucket is not the one being taken from: its next earliest is
  // looked for instead.
  queue.Erase(made[1]);  // at 10
  queue.Erase(before);
  EXPECT_EQ(queue.front().record, made[3]);  // at 20
  queue.Erase(made[0]);  // at 40, from the middle of the bucket
  EXPECT_THAT(InOrder(queue), ElementsAreArray({made[3], made[2]}));
}

TEST(CalendarQueueTest, ExtremeTimesHaveBuckets) {
  Records records;
  CalendarQueue queue;
  JobRecord* past = records.Make(kNoTime + 1);
  JobRecord* never = records.Make(kNever);
  JobRecord* now = records.Make(kStart);
  for (JobRecord* r : {never, now, past}) queue.Insert(r);
  EXPECT_THAT(InOrder(queue), ElementsAreArray({past, now, never}));
  queue.Erase(past);
  queue.Erase(now);
  EXPECT_EQ(queue.front().record, never);
  queue.Erase(never);
  EXPECT_TRUE(queue.empty());
}

// --- Against the reference model ----------------------------------------

struct ModelOrder {
  bool operator()(const JobRecord* a, const JobRecord* b) const {
    if (a->run_at() != b->run_at()) return a->run_at() < b->run_at();
    return a->seq() < b->seq();
  }
};

class CalendarModelRun {
 public:
  explicit CalendarModelRun(uint64_t seed) : rng_(seed) {}

  void Run(int ops) {
    for (int op = 0; op < ops && !::testing::Test::HasFailure(); ++op) {
      const int dice = Uniform(0, 99);
      if (dice < 45 || model_.empty()) {
        Insert();
      } else if (dice < 70) {
        Take();  // what promotion does: the earliest leaves
      } else if (dice < 90) {
        EraseAny();  // a cancel or a replace
      } else if (dice < 97) {
        now_ += Uniform(0, 3) * kBucket + Uniform(0, kBucket);
      } else {
        EXPECT_THAT(InOrder(queue_),
                    ElementsAreArray(model_.begin(), model_.end()));
      }
      Check();
    }
    while (!model_.empty() && !::testing::Test::HasFailure()) {
      Take();
      Check();
    }
  }

 private:
  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  // Times near the moving now, in its bucket, at a few shared instants
  // (ties), before it (late inserts) and far after it.
  int64_t DrawTime() {
    switch (Uniform(0, 4)) {
      case 0:
        return now_ + Uniform(0, kBucket / 4);
      case 1:
        return now_ + Uniform(0, 4) * 1000;
      case 2:
        return now_ - Uniform(0, 3 * kBucket);
      case 3:
        return now_ + Uniform(0, 40 * kBucket);
      default:
        return now_ + Uniform(0, 3600) * 1'000'000;
    }
  }

  void Insert() {
    JobRecord* r = records_.Make(DrawTime());
    queue_.Insert(r);
    model_.insert(r);
  }

  void Take() {
    JobRecord* first = *model_.begin();
    ASSERT_EQ(queue_.front().record, first);
    queue_.Erase(first);
    model_.erase(model_.begin());
  }

  void EraseAny() {
    auto it = std::next(model_.begin(), Uniform(0, model_.size() - 1));
    queue_.Erase(*it);
    model_.erase(it);
  }

  void Check() {
    ASSERT_EQ(queue_.size(), model_.size());
    ASSERT_EQ(queue_.empty(), model_.empty());
    if (model_.empty()) return;
    ASSERT_EQ(queue_.front().record, *model_.begin());
    ASSERT_EQ(queue_.front().at, (*model_.begin())->run_at());
  }

  std::mt19937_64 rng_;
  int64_t now_ = kStart;
  Records records_;
  CalendarQueue queue_;
  std::set<JobRecord*, ModelOrder> model_;
};

TEST(CalendarQueuePropertyTest, AgreesWithASortedSet) {
  uint64_t seed = std::random_device{}();
  if (const char* fixed = std::getenv("DELAYQ_CALENDAR_SEED")) {
    seed = std::strtoull(fixed, nullptr, 10);
  }
  std::cout << "DELAYQ_CALENDAR_SEED=" << seed << "\n";
  for (int run = 0; run < 20 && !HasFailure(); ++run) {
    CalendarModelRun(seed + run).Run(5000);
  }
}

}  // namespace
}  // namespace memory_internal
}  // namespace delayq
