// Copyright delayq authors.

#include "src/event_hub.h"

#include <utility>

namespace delayq {
namespace internal {

int EventHub::Add(EventListener listener) {
  absl::MutexLock lock(&mu_);
  const int handle = next_handle_++;
  listeners_.emplace(handle, std::move(listener));
  count_.store(static_cast<int>(listeners_.size()));
  return handle;
}

void EventHub::Remove(int handle) {
  absl::MutexLock lock(&mu_);
  listeners_.erase(handle);
  count_.store(static_cast<int>(listeners_.size()));
}

void EventHub::Emit(const Event& event) {
  if (!active()) return;
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [handle, listener] : listeners_) listener(event);
}

}  // namespace internal
}  // namespace delayq
