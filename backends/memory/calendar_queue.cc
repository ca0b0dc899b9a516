// Copyright delayq authors.

#include "backends/memory/calendar_queue.h"

#include <algorithm>
#include <utility>

namespace delayq {
namespace memory_internal {
namespace {

// Latest first: the run is taken from its end.
struct Later {
  bool operator()(const TimeKey& a, const TimeKey& b) const {
    return TimeOrder()(b, a);
  }
};

}  // namespace

void CalendarQueue::Insert(JobRecord* r) {
  const int64_t at = r->run_at();
  const TimeKey key{at, r};
  ++size_;
  if (InNear(at)) {
    late_.insert(key);
    return;
  }
  const int64_t number = BucketOf(at);
  auto [it, added] = far_.try_emplace(number);
  Bucket& bucket = it->second;
  if (added) order_.insert(number);
  r->set_due_slot(bucket.keys.size());
  bucket.keys.push_back(key);
  if (added || TimeOrder()(key, bucket.first)) bucket.first = key;
}

void CalendarQueue::Erase(JobRecord* r) {
  --size_;
  if (!InNear(r->run_at())) {
    EraseFar(r);
    return;
  }
  EraseNear(r);
}

const TimeKey& CalendarQueue::NearFront() const {
  if (late_.empty()) return run_.back();
  if (run_.empty() || TimeOrder()(*late_.begin(), run_.back())) {
    return *late_.begin();
  }
  return run_.back();
}

void CalendarQueue::EraseNear(JobRecord* r) {
  const TimeKey key{r->run_at(), r};
  if (!run_.empty() && run_.back().record == r) {
    run_.pop_back();  // the common case: the earliest left
  } else if (late_.erase(key) == 0) {
    // In the run, which is sorted latest first.
    run_.erase(std::lower_bound(run_.begin(), run_.end(), key, Later()));
  }
  if (NearEmpty()) {
    near_bucket_ = kNoBucket;
    std::vector<TimeKey>().swap(run_);
  }
}

void CalendarQueue::EraseFar(JobRecord* r) {
  const int64_t number = BucketOf(r->run_at());
  Bucket& bucket = far_.find(number)->second;
  std::vector<TimeKey>& keys = bucket.keys;
  const uint64_t slot = r->due_slot();
  if (slot + 1 != keys.size()) {
    keys[slot] = keys.back();
    keys[slot].record->set_due_slot(slot);
  }
  keys.pop_back();
  if (keys.empty()) {
    DropBucket(number);
    return;
  }
  if (bucket.first.record != r) return;
  // The first bucket's earliest job left: it is being taken from.
  if (number == *order_.begin() && NearEmpty()) {
    Pull();
    return;
  }
  bucket.first = *std::min_element(keys.begin(), keys.end(), TimeOrder());
}

void CalendarQueue::DropBucket(int64_t number) {
  far_.erase(number);
  order_.erase(number);
}

void CalendarQueue::Pull() {
  near_bucket_ = *order_.begin();
  std::vector<TimeKey> keys = std::move(far_.find(near_bucket_)->second.keys);
  DropBucket(near_bucket_);
  std::sort(keys.begin(), keys.end(), Later());
  run_ = std::move(keys);
}

std::vector<TimeKey> CalendarQueue::Sorted(const std::vector<TimeKey>& keys) {
  std::vector<TimeKey> sorted = keys;
  std::sort(sorted.begin(), sorted.end(), TimeOrder());
  return sorted;
}

}  // namespace memory_internal
}  // namespace delayq
