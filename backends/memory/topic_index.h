// Copyright delayq authors.
//
// TopicIndex — the memory store's ordered indexes of one topic, one per
// state: ready by (priority, run_at, enqueue order) in a B-tree, dead by
// death order in a B-tree, and the two states that wait for a time in
// timing wheels (job_timers.h): delayed by (run_at, enqueue order), reserved
// by (deadline, enqueue order). A delayed or ready job that expires is also
// in a third wheel, by (expire_at, enqueue order). A record sits in exactly
// the index of its state, so the topic's counts are the index sizes.
//
// Why a wheel per topic and kind, not one for the store: every question
// the store asks of its timers is about one topic. Reserve(topic) first
// moves that topic's due jobs, earliest first; List(topic, delayed) lists
// one topic's delayed jobs in order, a few at a time. Per topic, the first
// is the front of three wheels (O(1) while it stays; the wheel finds the
// next when it leaves), and the second walks one wheel from its front,
// sorting only the slots it reaches. A wheel for the whole store would hold
// other topics' timers in every slot on the way. Across topics the store
// keeps one entry per topic, at the topic's earliest due time (see
// MemoryBackend::due_topics_), which is all PromoteDue() and NextDue() need.
// The price is per topic: its three wheels take about 1.4 KB even when
// empty, several times what B-trees would (their levels keep room only for
// occupied slots while small, so a few timers add little). Per timer, a
// wheel takes 24 bytes.

#ifndef DELAYQ_BACKENDS_MEMORY_TOPIC_INDEX_H_
#define DELAYQ_BACKENDS_MEMORY_TOPIC_INDEX_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/container/btree_set.h"
#include "backends/memory/job_record.h"
#include "backends/memory/job_timers.h"

namespace delayq {
namespace memory_internal {

struct ReadyKey {
  int64_t run_at;
  int32_t priority;
  JobRecord* record;
};
// A place in the ready order that no job need hold: where a page of
// List(ready) goes on from (ListPage()).
struct ReadyPosition {
  int64_t run_at;
  int32_t priority;
  uint64_t seq;
};
struct ReadyOrder {
  using is_transparent = void;
  bool operator()(const ReadyKey& a, const ReadyKey& b) const {
    return Less(Of(a), Of(b));
  }
  bool operator()(const ReadyKey& a, const ReadyPosition& b) const {
    return Less(Of(a), b);
  }
  bool operator()(const ReadyPosition& a, const ReadyKey& b) const {
    return Less(a, Of(b));
  }
  static ReadyPosition Of(const ReadyKey& k) {
    return {k.run_at, k.priority, k.record->seq()};
  }
  static bool Less(const ReadyPosition& a, const ReadyPosition& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.run_at != b.run_at) return a.run_at < b.run_at;
    return a.seq < b.seq;
  }
};

using DeathKey = std::pair<uint64_t, JobRecord*>;

// A done job: when it leaves, then the order it was acknowledged in.
struct DoneKey {
  int64_t leave_at;
  uint64_t done_seq;
  JobRecord* record;
  bool operator<(const DoneKey& o) const {
    if (leave_at != o.leave_at) return leave_at < o.leave_at;
    return done_seq < o.done_seq;
  }
};

struct TopicIndex {
  // A topic made at `now_us` (microseconds): its wheels' time.
  TopicIndex(std::string topic, int64_t now_us)
      : name(std::move(topic)),
        delayed(TickOfMicros(now_us)),
        reserved(TickOfMicros(now_us)),
        expiring(TickOfMicros(now_us)) {}

  // When the topic next has a delayed job, a lease or an expiry due;
  // kNoTime if never.
  int64_t NextDue();

  // The delayed job, lease or expiry that is due first (the earliest of the
  // wheels' fronts; on a tie a delayed job, then a lease); null if none.
  JobRecord* EarliestDue();

  bool empty() const {
    return ready.empty() && delayed.empty() && reserved.empty() &&
           dead.empty() && done.empty() && waiting.empty();
  }

  const std::string name;
  absl::btree_set<ReadyKey, ReadyOrder> ready;
  JobWheel<RunAtTimers> delayed;
  JobWheel<LeaseTimers> reserved;
  absl::btree_set<DeathKey> dead;
  // Jobs kept after their acknowledgement, in the order they leave.
  absl::btree_set<DoneKey> done;
  // Jobs waiting for others (JobOptions::after), in enqueue order.
  absl::btree_set<std::pair<uint64_t, JobRecord*>> waiting;
  // Delayed and ready jobs that expire.
  JobWheel<ExpiryTimers> expiring;
  // The time under which the store's list of topic due times has this
  // topic (see MemoryBackend::due_topics_); kNoTime when it is not listed.
  int64_t listed_due = kNoTime;
};

// Restarts an empty wheel at `now_us`, so that the next timers go to the
// slots their distance from now gives: a wheel whose Front() ran ahead to a
// far timer would otherwise take the nearer ones into its sorted drain, and
// one left behind would cascade them from higher levels than needed.
template <typename Timers>
void RestartIfEmpty(JobWheel<Timers>& wheel, int64_t now_us) {
  if (wheel.empty()) wheel.Restart(TickOfMicros(now_us));
}

}  // namespace memory_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_MEMORY_TOPIC_INDEX_H_
