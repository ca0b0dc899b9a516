// Copyright delayq authors.

#include "tools/serve/job_history.h"

#include <utility>

namespace delayq {
namespace serve {

void JobHistory::Record(const Event& event) {
  RecordAll(absl::MakeConstSpan(&event, 1));
}

void JobHistory::RecordAll(absl::Span<const Event> events) {
  if (max_jobs_ == 0) return;
  absl::MutexLock lock(&mu_);
  for (const Event& event : events) Add(event);
}

void JobHistory::Add(const Event& event) {
  auto it = slots_.find(event.id);
  Job& job = it != slots_.end() ? ring_[it->second] : Reuse(event);
  if (max_events_ == 0) return;
  if (job.entries.size() >= max_events_) job.entries.erase(job.entries.begin());
  job.entries.push_back(
      Entry{event.type, event.attempts, event.at, event.error});
}

JobHistory::Job& JobHistory::Reuse(const Event& event) {
  if (ring_.size() < max_jobs_) {
    ring_.emplace_back();
  } else {
    slots_.erase(ring_[next_].id);
  }
  const size_t slot = next_;
  next_ = (next_ + 1) % max_jobs_;
  Job& job = ring_[slot];
  job.id.assign(event.id);
  job.topic.assign(event.topic);
  job.entries.clear();
  slots_.emplace(job.id, slot);
  return job;
}

std::vector<Event> JobHistory::Of(absl::string_view id) const {
  absl::MutexLock lock(&mu_);
  auto it = slots_.find(id);
  if (it == slots_.end()) return {};
  const Job& job = ring_[it->second];
  std::vector<Event> events;
  events.reserve(job.entries.size());
  for (const Entry& entry : job.entries) {
    Event event;
    event.type = entry.type;
    event.id = job.id;
    event.topic = job.topic;
    event.at = entry.at;
    event.attempts = entry.attempts;
    event.error = entry.error;
    events.push_back(std::move(event));
  }
  return events;
}

}  // namespace serve
}  // namespace delayq
