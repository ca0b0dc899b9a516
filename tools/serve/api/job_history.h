// Copyright delayq authors.
//
// JobHistory — what happened to recent jobs, as this server's scheduler
// saw it: the events it made or observed (enqueued, reserved, failed,
// retried, promoted, ...), kept in memory for the dashboard's job details.
// Transitions that other processes sharing the store make are not seen
// here, and the history does not survive a restart: the store keeps a
// job's state, not its past.
//
// Bounded: the most recent `max_events` events, of all jobs, in a ring.
// Recording is on every job's path and asking is rare (an operator opens
// a job), so recording only appends: no index by id to hash, probe and
// keep up (which cost the server about a tenth of its CPU), and asking
// reads the whole ring (about 4 ms for a million events, the most the
// server keeps; well under 0.1 ms for its default).

#ifndef DELAYQ_TOOLS_SERVE_API_JOB_HISTORY_H_
#define DELAYQ_TOOLS_SERVE_API_JOB_HISTORY_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "delayq/event.h"

namespace delayq {
namespace serve {

class JobHistory {
 public:
  explicit JobHistory(size_t max_events) : max_events_(max_events) {}

  // An EventListener for Scheduler::AddListener(), and an
  // EventBatchListener for AddBatchListener() (one lock per call).
  void Record(const Event& event);
  void RecordAll(absl::Span<const Event> events);

  // The job's events still in the ring, oldest first; empty when none.
  std::vector<Event> Of(absl::string_view id) const;

 private:
  // An event as kept. A slot written again keeps its strings' capacity,
  // so a full ring records an event without allocating.
  struct Entry {
    EventType type;
    int attempts;
    absl::Time at;
    std::string id;
    std::string topic;
    std::string error;
  };

  const size_t max_events_;
  mutable absl::Mutex mu_;
  // Grows to max_events_, then the oldest entry (at next_) is written over.
  std::vector<Entry> ring_ ABSL_GUARDED_BY(mu_);
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_API_JOB_HISTORY_H_
