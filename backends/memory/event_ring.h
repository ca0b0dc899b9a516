// Copyright delayq authors.
//
// EventRing — the memory store's event log (delayq/event_log.h): the newest
// max_events events, oldest first. A job's events are found by scanning
// from the newest, which bounds a read by the ring's size; the log is for
// an operator's look at one job, not a hot path.
//
// Appending is on every transition's path, though. The events live in
// slots that are written over once the ring is full: a new event's strings
// go into the memory of the ones it replaces, so a full ring appends
// without allocating or freeing (a deque of events freed the oldest's
// strings and allocated the newest's, four of each per event).
//
// Not thread-safe: the store guards it with its mutex.

#ifndef DELAYQ_BACKENDS_MEMORY_EVENT_RING_H_
#define DELAYQ_BACKENDS_MEMORY_EVENT_RING_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "delayq/event_log.h"

namespace delayq {
namespace memory_internal {

class EventRing {
 public:
  explicit EventRing(int64_t max_events) : max_events_(max_events) {}

  void Append(absl::Span<const LoggedEvent> events);
  // The newest `limit` events of `id`, oldest first.
  std::vector<LoggedEvent> Of(absl::string_view id, int limit) const;

 private:
  int64_t max_events_;
  // Grows to max_events_ slots, then wraps.
  std::vector<LoggedEvent> slots_;
  // The slot the next event goes to once the ring is full.
  size_t next_ = 0;
};

}  // namespace memory_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_MEMORY_EVENT_RING_H_
