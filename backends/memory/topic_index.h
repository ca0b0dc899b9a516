// Copyright delayq authors.
//
// TopicIndex — the memory store's ordered indexes of one topic, one per
// state: ready by (priority, run_at, enqueue order), delayed by (run_at,
// enqueue order), reserved by (deadline, enqueue order), dead by death order.
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
#include "backends/memory/job_record.h"

namespace delayq {
namespace memory_internal {

// A delayed job by run_at, or a reservation by deadline.
struct TimeKey {
  int64_t at;
  JobRecord* record;
};
struct TimeOrder {
  bool operator()(const TimeKey& a, const TimeKey& b) const {
    if (a.at != b.at) return a.at < b.at;
    return a.record->seq() < b.record->seq();
  }
};

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
    int64_t due = kNoTime;
    for (const auto* set : {&delayed, &reserved, &expiring}) {
      if (set->empty()) continue;
      const int64_t at = set->begin()->at;
      if (due == kNoTime || at < due) due = at;
    }
    return due;
  }

  bool empty() const {
    return ready.empty() && delayed.empty() && reserved.empty() && dead.empty();
  }

  const std::string name;
  absl::btree_set<ReadyKey, ReadyOrder> ready;
  absl::btree_set<TimeKey, TimeOrder> delayed;
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
