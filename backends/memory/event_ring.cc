// Copyright delayq authors.

#include "backends/memory/event_ring.h"

#include <algorithm>

namespace delayq {
namespace memory_internal {

void EventRing::Append(absl::Span<const LoggedEvent> events) {
  if (max_events_ <= 0) return;
  // Only the newest max_events of a batch could stay.
  size_t skip = events.size() > static_cast<size_t>(max_events_)
                    ? events.size() - static_cast<size_t>(max_events_)
                    : 0;
  for (size_t i = skip; i < events.size(); ++i) events_.push_back(events[i]);
  while (events_.size() > static_cast<size_t>(max_events_)) {
    events_.pop_front();
  }
}

std::vector<LoggedEvent> EventRing::Of(absl::string_view id, int limit) const {
  std::vector<LoggedEvent> found;
  for (auto it = events_.rbegin();
       it != events_.rend() && static_cast<int>(found.size()) < limit; ++it) {
    if (it->id == id) found.push_back(*it);
  }
  std::reverse(found.begin(), found.end());
  return found;
}

}  // namespace memory_internal
}  // namespace delayq
