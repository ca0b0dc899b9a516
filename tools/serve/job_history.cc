// Copyright delayq authors.

#include "tools/serve/job_history.h"

#include <utility>

namespace delayq {
namespace serve {

void JobHistory::Record(const Event& event) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = events_.try_emplace(event.id);
  if (inserted) {
    it->second.topic = event.topic;
    order_.push_back(it->first);
    while (order_.size() > max_jobs_) {
      const absl::string_view oldest = order_.front();
      order_.pop_front();
      events_.erase(events_.find(oldest));
    }
    it = events_.find(event.id);
    if (it == events_.end()) return;  // max_jobs_ is 0
  }
  auto& entries = it->second.entries;
  if (entries.size() >= max_events_ && !entries.empty()) {
    entries.erase(entries.begin());
  }
  if (max_events_ > 0) {
    entries.push_back(Entry{event.type, event.attempts, event.at, event.error});
  }
}

std::vector<Event> JobHistory::Of(absl::string_view id) const {
  absl::MutexLock lock(&mu_);
  auto it = events_.find(id);
  if (it == events_.end()) return {};
  std::vector<Event> events;
  events.reserve(it->second.entries.size());
  for (const Entry& entry : it->second.entries) {
    Event event;
    event.type = entry.type;
    event.id = it->first;
    event.topic = it->second.topic;
    event.at = entry.at;
    event.attempts = entry.attempts;
    event.error = entry.error;
    events.push_back(std::move(event));
  }
  return events;
}

}  // namespace serve
}  // namespace delayq
