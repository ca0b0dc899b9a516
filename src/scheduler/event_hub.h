// Copyright delayq authors.
//
// EventHub — the scheduler's listeners. Thread-safe.
//
// Listeners run with no lock held, so they may call the scheduler, including
// AddListener() and RemoveListener() (even their own).

#ifndef DELAYQ_SRC_SCHEDULER_EVENT_HUB_H_
#define DELAYQ_SRC_SCHEDULER_EVENT_HUB_H_

#include <atomic>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "delayq/event.h"

namespace delayq {
namespace internal {

class EventHub {
 public:
  int Add(EventListener listener);
  int AddBatch(EventBatchListener listener);

  // When Remove() returns, the listener is not running (except on the
  // calling thread, when a listener removes itself) and never runs again.
  void Remove(int handle);

  // Whether anyone listens; lets callers skip building events.
  bool active() const { return count_.load(std::memory_order_relaxed) > 0; }

  // Calls every listener with `event`. A listener that throws is ignored.
  void Emit(const Event& event);
  // Calls every listener with each of `events` in order: the events of one
  // call (a batch), with one look at the listener list for them all (a
  // listener added meanwhile hears from the next call on).
  void EmitAll(absl::Span<const Event> events);

 private:
  // One listener: of single events, or of a call's events (`batch`).
  struct Entry {
    EventListener one;
    EventBatchListener batch;
    int running = 0;  // calls in progress, guarded by mu_
    // Set by Remove(): what a removed listener was still to hear in the
    // calls under way is not told (the rest of a batch, or all of it).
    std::atomic<bool> removed{false};
  };

  int AddEntry(std::shared_ptr<Entry> entry);

  absl::Mutex mu_;
  std::map<int, std::shared_ptr<Entry>> listeners_ ABSL_GUARDED_BY(mu_);
  int next_handle_ ABSL_GUARDED_BY(mu_) = 1;
  std::atomic<int> count_{0};
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_EVENT_HUB_H_
