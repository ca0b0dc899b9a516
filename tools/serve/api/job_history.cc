// Copyright delayq authors.

#include "tools/serve/api/job_history.h"

#include <utility>

namespace delayq {
namespace serve {
namespace {

// The most of an event's error the ring keeps: its first KiB, not cut in
// the middle of a UTF-8 sequence.
absl::string_view Glimpse(absl::string_view error) {
  constexpr size_t kErrorBytes = 1024;
  if (error.size() <= kErrorBytes) return error;
  size_t cut = kErrorBytes;
  while (cut > 0 && (static_cast<unsigned char>(error[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  return error.substr(0, cut);
}

}  // namespace

void JobHistory::Record(const Event& event) {
  RecordAll(absl::MakeConstSpan(&event, 1));
}

void JobHistory::RecordAll(absl::Span<const Event> events) {
  if (max_events_ == 0) return;
  absl::MutexLock lock(&mu_);
  for (const Event& event : events) {
    if (ring_.size() < max_events_) ring_.emplace_back();
    Entry& entry = ring_[next_];
    next_ = (next_ + 1) % max_events_;
    entry.type = event.type;
    entry.attempts = event.attempts;
    entry.at = event.at;
    entry.id.assign(event.id);
    entry.topic.assign(event.topic);
    // An error is kept whole by the store; a glimpse is enough here, and
    // keeps the ring's size bounded whatever the errors.
    const absl::string_view error = Glimpse(event.error);
    entry.error.assign(error.data(), error.size());
  }
}

std::vector<Event> JobHistory::Of(absl::string_view id) const {
  std::vector<Event> events;
  auto add_if_its = [&](const Entry& entry) {
    if (entry.id != id) return;
    Event event;
    event.type = entry.type;
    event.id = entry.id;
    event.topic = entry.topic;
    event.at = entry.at;
    event.attempts = entry.attempts;
    event.error = entry.error;
    events.push_back(std::move(event));
  };
  absl::MutexLock lock(&mu_);
  // Oldest first: from next_ to the end, then from the start to next_.
  // While the ring still grows, next_ is its end.
  for (size_t k = next_; k < ring_.size(); ++k) add_if_its(ring_[k]);
  for (size_t k = 0; k < next_; ++k) add_if_its(ring_[k]);
  return events;
}

}  // namespace serve
}  // namespace delayq
