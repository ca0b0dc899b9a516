// Copyright delayq authors.

#include "backends/memory/event_ring.h"

#include <algorithm>

namespace delayq {
namespace memory_internal {

void EventRing::Append(absl::Span<const LoggedEvent> events) {
  if (max_events_ <= 0) return;
  const size_t capacity = static_cast<size_t>(max_events_);
  // Only the newest max_events of a batch could stay.
  const size_t skip = events.size() > capacity ? events.size() - capacity : 0;
  for (size_t i = skip; i < events.size(); ++i) {
    if (slots_.size() < capacity) {
      slots_.push_back(events[i]);
      continue;
    }
    slots_[next_] = events[i];  // the strings reuse the slot's memory
    next_ = (next_ + 1) % capacity;
  }
}

std::vector<LoggedEvent> EventRing::Of(absl::string_view id, int limit) const {
  std::vector<LoggedEvent> found;
  // Newest first: the slot before next_, back round to next_ (the oldest).
  const size_t n = slots_.size();
  for (size_t k = 0; k < n && static_cast<int>(found.size()) < limit; ++k) {
    const LoggedEvent& e = slots_[(next_ + n - 1 - k) % n];
    if (e.id == id) found.push_back(e);
  }
  std::reverse(found.begin(), found.end());
  return found;
}

}  // namespace memory_internal
}  // namespace delayq
