// Copyright delayq authors.
//
// CalendarQueue — one topic's delayed jobs in (run_at, enqueue order), built
// for millions of pending timers that arrive in any order.
//
// A sorted index of every delayed job costs a walk down a tree per job, and
// with a million jobs that walk misses the cache at every level. Most of
// those jobs are far in the future, though, and their order only matters
// once they are among the next to come due. So the queue keeps two tiers, as
// a timing wheel does:
//   * far: each job in an unsorted bucket of its time span (kBucketBits of
//     microseconds), appended in O(1), each bucket with its earliest job at
//     hand. The buckets are ordered by their number; there are few of them,
//     so finding one stays in the cache;
//   * near: the jobs of the bucket being taken from, sorted: the bucket's
//     own vector, sorted once when its earliest job leaves (promoted or
//     cancelled), then taken from its end; jobs added to its span later go
//     in a small B-tree beside it.
// Every near job is due before every far one, so the earliest job is the
// first of near or, with near empty, the first bucket's earliest.
// A job's place in its far bucket lives in the record (JobRecord::due_slot()),
// so removing any job (a cancel, a replace) is O(1) in far, but for the rare
// removal of a bucket's earliest job, which looks for the next one
// (O(bucket)); in near it is O(log near), and O(near) to close the gap
// when the job is not the next due.
//
// A record's run_at must not change while it is in the queue. Not
// thread-safe: the store's mutex guards it.

#ifndef DELAYQ_BACKENDS_MEMORY_CALENDAR_QUEUE_H_
#define DELAYQ_BACKENDS_MEMORY_CALENDAR_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "backends/memory/job_record.h"
#include "backends/memory/time_key.h"

namespace delayq {
namespace memory_internal {

class CalendarQueue {
 public:
  // A far bucket spans 2^kBucketBits microseconds (about half a second).
  // Fewer, wider buckets keep more of them in the cache while timers arrive
  // (a million timers over an hour enqueue some 15% faster with 2^20 than
  // with 2^18), but the host loop's frame that sorts one pays for its size
  // (2^20 put some 3 us on the 99th percentile of a 60 Hz frame; 2^19 does
  // not show).
  static constexpr int kBucketBits = 19;

  CalendarQueue() = default;
  CalendarQueue(const CalendarQueue&) = delete;
  CalendarQueue& operator=(const CalendarQueue&) = delete;

  // Adds `r` under its run_at. REQUIRES: `r` is not in the queue.
  void Insert(JobRecord* r);
  // Removes `r`. REQUIRES: `r` is in the queue, with the run_at it had when
  // inserted.
  void Erase(JobRecord* r);

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  // The earliest job. REQUIRES: !empty().
  const TimeKey& front() const {
    return NearEmpty() ? far_.find(*order_.begin())->second.first : NearFront();
  }

  // Calls `visit(record)` for the jobs in order until it returns false.
  // Far buckets are sorted on the way (a copy each): for listing, not for
  // the hot path.
  template <typename Visit>
  void ForEachInOrder(Visit visit) const {
    // The run (latest first) and the late jobs, merged.
    auto run = run_.rbegin();
    auto late = late_.begin();
    while (run != run_.rend() || late != late_.end()) {
      const bool from_run = late == late_.end() ||
                            (run != run_.rend() && TimeOrder()(*run, *late));
      if (!visit(from_run ? (run++)->record : (late++)->record)) return;
    }
    for (int64_t number : order_) {
      for (const TimeKey& key : Sorted(far_.find(number)->second.keys)) {
        if (!visit(key.record)) return;
      }
    }
  }

 private:
  static constexpr int64_t kNoBucket = std::numeric_limits<int64_t>::min();
  static int64_t BucketOf(int64_t at) { return at >> kBucketBits; }
  static std::vector<TimeKey> Sorted(const std::vector<TimeKey>& keys);

  struct Bucket {
    // Unsorted; a job's index is its due_slot().
    std::vector<TimeKey> keys;
    // The earliest of keys.
    TimeKey first;
  };

  bool InNear(int64_t at) const { return BucketOf(at) <= near_bucket_; }
  bool NearEmpty() const { return run_.empty() && late_.empty(); }
  // The earliest near job. REQUIRES: !NearEmpty().
  const TimeKey& NearFront() const;
  void EraseNear(JobRecord* r);
  void EraseFar(JobRecord* r);
  void DropBucket(int64_t number);
  // Sorts the first far bucket into near.
  void Pull();

  // Near: the pulled bucket sorted latest first, and the jobs added since.
  std::vector<TimeKey> run_;
  absl::btree_set<TimeKey, TimeOrder> late_;
  // Bucket number -> bucket, and the numbers in order: finding a job's
  // bucket is one hash probe; the order changes once per bucket, not per job.
  absl::flat_hash_map<int64_t, Bucket> far_;
  absl::btree_set<int64_t> order_;
  // Jobs of this bucket or earlier belong in near; the lowest number while
  // near is empty.
  int64_t near_bucket_ = kNoBucket;
  size_t size_ = 0;
};

}  // namespace memory_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_MEMORY_CALENDAR_QUEUE_H_
