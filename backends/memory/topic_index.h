// Copyright delayq authors.
//
// TopicIndex — the memory store's ordered indexes of one topic, one per
// state: ready by (priority, run_at, enqueue order), delayed by (run_at,
// enqueue order) in a calendar queue (calendar_queue.h: the state that holds
// millions), reserved by (deadline, enqueue order), dead by death order.
// A record sits in exactly the index of its state, so the topic's counts are
// the index sizes; a delayed or ready job that expires is in `expiring` too.
// Keys hold a time and the record; the enqueue order, needed only to break
// ties, is read from the record then.

#ifndef DELAYQ_BACKENDS_MEMORY_TOPIC_INDEX_H_
#define DELAYQ_BACKENDS_MEMORY_TOPIC_INDEX_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/container/btree_set.h"
#include "backends/memory/calendar_queue.h"
#include "backends/memory/job_record.h"
#include "backends/memory/time_key.h"

namespace delayq {
namespace memory_internal {

struct ReadyKey {
  int64_t run_at;
  int32_t priority;
  JobRecord* record;
};
struct ReadyOrder {
  bool operator()(const ReadyKey& a, const ReadyKey& b) const {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.run_at != b.run_at) return a.run_at < b.run_at;
    return a.record->seq() < b.record->seq();
  }
};

using DeathKey = std::pair<uint64_t, JobRecord*>;

struct TopicIndex {
  explicit TopicIndex(std::string topic) : name(std::move(topic)) {}

  // When the topic next has a delayed job, a lease or an expiry due;
  // kNoTime if never.
  int64_t NextDue() const {
    const TimeKey* first = EarliestDue();
    return first == nullptr ? kNoTime : first->at;
  }

  // The delayed job, lease or expiry that is due first; null if none.
  const TimeKey* EarliestDue() const {
    const TimeKey* first = delayed.empty() ? nullptr : &delayed.front();
    for (const auto* set : {&reserved, &expiring}) {
      if (!set->empty() && (first == nullptr || set->begin()->at < first->at)) {
        first = &*set->begin();
      }
    }
    return first;
  }

  bool empty() const {
    return ready.empty() && delayed.empty() && reserved.empty() && dead.empty();
  }

  const std::string name;
  absl::btree_set<ReadyKey, ReadyOrder> ready;
  CalendarQueue delayed;
  absl::btree_set<TimeKey, TimeOrder> reserved;
  absl::btree_set<DeathKey> dead;
  // Delayed and ready jobs that expire, by expire_at.
  absl::btree_set<TimeKey, TimeOrder> expiring;
  // The time under which the store's list of topic due times has this
  // topic (see MemoryBackend::due_topics_); kNoTime when it is not listed.
  int64_t listed_due = kNoTime;
};

}  // namespace memory_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_MEMORY_TOPIC_INDEX_H_
