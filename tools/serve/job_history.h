// Copyright delayq authors.
//
// JobHistory — what happened to recent jobs, as this server's scheduler
// saw it: the events it made or observed (enqueued, reserved, failed,
// retried, promoted, ...), kept in memory for the dashboard's job details.
// Transitions that other processes sharing the store make are not seen
// here, and the history does not survive a restart: the store keeps a
// job's state, not its past.
//
// Bounded: the most recent `max_jobs` jobs (by their first event here),
// each with its last `max_events` events.

#ifndef DELAYQ_TOOLS_SERVE_JOB_HISTORY_H_
#define DELAYQ_TOOLS_SERVE_JOB_HISTORY_H_

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "delayq/event.h"

namespace delayq {
namespace serve {

class JobHistory {
 public:
  JobHistory(size_t max_jobs, size_t max_events)
      : max_jobs_(max_jobs), max_events_(max_events) {}

  // An EventListener for Scheduler::AddListener(), and an
  // EventBatchListener for AddBatchListener() (one lock per call).
  void Record(const Event& event);
  void RecordAll(absl::Span<const Event> events);

  // The job's events, oldest first; empty when none was seen or kept.
  std::vector<Event> Of(absl::string_view id) const;

 private:
  // An event without the id and topic its job already gives: recording
  // one costs little more than a copy of its error, when it has one.
  struct Entry {
    EventType type;
    int attempts;
    absl::Time at;
    std::string error;
  };
  struct Job {
    std::string id;
    std::string topic;
    // Oldest first, <= max_events_. A job's life here is three or four
    // events: enqueued, promoted when it was delayed, reserved, succeeded.
    absl::InlinedVector<Entry, 4> entries;
  };

  // The slot of a job not seen before: the next one round the ring, whose
  // job (the oldest) is forgotten. Its strings keep their capacity, so a
  // full history records a new job without allocating.
  Job& Reuse(const Event& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Add(const Event& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_jobs_;
  const size_t max_events_;
  mutable absl::Mutex mu_;
  // The jobs in a ring, in the order of their first event here, and the
  // index of each by its id (a view of the slot's own id).
  std::deque<Job> ring_ ABSL_GUARDED_BY(mu_);  // grows without moving its jobs
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<absl::string_view, size_t> slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_JOB_HISTORY_H_
