// Copyright delayq authors.

#include "backends/memory/topic_index.h"

namespace delayq {
namespace memory_internal {
namespace {

struct Due {
  JobRecord* record = nullptr;
  int64_t at = kNoTime;
};

// `due`, or the front of `wheel` when that is due strictly earlier.
template <typename Timers>
Due Earlier(Due due, JobWheel<Timers>& wheel) {
  JobRecord* const* front = wheel.Front();
  if (front == nullptr) return due;
  const int64_t at = Timers::KeyOf(*front).at;
  if (due.record != nullptr && due.at <= at) return due;
  return Due{*front, at};
}

Due EarliestOf(TopicIndex& index) {
  return Earlier(Earlier(Earlier(Due(), index.delayed), index.reserved),
                 index.expiring);
}

}  // namespace

int64_t TopicIndex::NextDue() { return EarliestOf(*this).at; }

JobRecord* TopicIndex::EarliestDue() { return EarliestOf(*this).record; }

}  // namespace memory_internal
}  // namespace delayq
