// Copyright delayq authors.

#include "tools/serve/job_history.h"

namespace delayq {
namespace serve {

void JobHistory::Record(const Event& event) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = events_.try_emplace(event.id);
  if (inserted) {
    order_.push_back(event.id);
    while (order_.size() > max_jobs_) {
      events_.erase(order_.front());
      order_.pop_front();
    }
    it = events_.find(event.id);
    if (it == events_.end()) return;  // max_jobs_ is 0
  }
  std::deque<Event>& events = it->second;
  events.push_back(event);
  while (events.size() > max_events_) events.pop_front();
}

std::vector<Event> JobHistory::Of(absl::string_view id) const {
  absl::MutexLock lock(&mu_);
  auto it = events_.find(id);
  if (it == events_.end()) return {};
  return std::vector<Event>(it->second.begin(), it->second.end());
}

}  // namespace serve
}  // namespace delayq
