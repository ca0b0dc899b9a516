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

#include "absl/container/inlined_vector.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "delayq/event.h"

namespace delayq {
namespace serve {

class JobHistory {
 public:
  JobHistory(size_t max_jobs, size_t max_events)
      : max_jobs_(max_jobs), max_events_(max_events) {}

  // An EventListener for Scheduler::AddListener().
  void Record(const Event& event);

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

  const size_t max_jobs_;
  const size_t max_events_;
  mutable absl::Mutex mu_;
  struct Job {
    std::string topic;
    // Oldest first, <= max_events_. A job's life here is three or four
    // events: enqueued, promoted when it was delayed, reserved, succeeded.
    absl::InlinedVector<Entry, 4> entries;
  };
  // A node map, so that `order_` can point at its keys.
  absl::node_hash_map<std::string, Job> events_ ABSL_GUARDED_BY(mu_);
  // The jobs' ids (events_'s keys) in the order of their first event; the
  // oldest goes first.
  std::deque<absl::string_view> order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_JOB_HISTORY_H_
