// Copyright delayq authors.

#include "src/scheduler/event_hub.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"

namespace delayq {
namespace internal {
namespace {

// The listener entries this thread holds a call of (counted in their
// `running`): the one being called and those still to come in the same
// EmitAll(), for each EmitAll() on the thread's stack.
thread_local std::vector<const void*> running_here;

int RunningHere(const void* entry) {
  int n = 0;
  for (const void* e : running_here) n += e == entry;
  return n;
}

// Runs one listener call. A listener's failure must not undo or hide the
// transition it was told about, nor kill a worker thread.
template <typename F>
void Call(F call) {
  try {
    call();
  } catch (...) {
  }
}

}  // namespace

int EventHub::Add(EventListener listener) {
  auto entry = std::make_shared<Entry>();
  entry->one = std::move(listener);
  return AddEntry(std::move(entry));
}

int EventHub::AddBatch(EventBatchListener listener) {
  auto entry = std::make_shared<Entry>();
  entry->batch = std::move(listener);
  return AddEntry(std::move(entry));
}

int EventHub::AddEntry(std::shared_ptr<Entry> entry) {
  absl::MutexLock lock(&mu_);
  const int handle = next_handle_++;
  listeners_.emplace(handle, std::move(entry));
  count_.store(static_cast<int>(listeners_.size()));
  return handle;
}

void EventHub::Remove(int handle) {
  absl::MutexLock lock(&mu_);
  auto it = listeners_.find(handle);
  if (it == listeners_.end()) return;
  std::shared_ptr<Entry> entry = std::move(it->second);
  listeners_.erase(it);
  entry->removed.store(true);
  count_.store(static_cast<int>(listeners_.size()));
  // Wait for calls on other threads. This thread's are our callers, or
  // still to come in one of its EmitAll() calls, which sees `removed`.
  struct Args {
    Entry* entry;
    int mine;
  } args{entry.get(), RunningHere(entry.get())};
  mu_.Await(absl::Condition(
      +[](Args* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return a->entry->running <= a->mine;
      },
      &args));
}

void EventHub::Emit(const Event& event) {
  EmitAll(absl::MakeConstSpan(&event, 1));
}

void EventHub::EmitAll(absl::Span<const Event> events) {
  if (!active() || events.empty()) return;
  absl::InlinedVector<std::shared_ptr<Entry>, 4> entries;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [handle, entry] : listeners_) {
      ++entry->running;
      entries.push_back(entry);
    }
  }
  // All of them at once: a listener may remove one still to come here,
  // which Remove() must not wait for (it would wait on this very thread).
  for (const std::shared_ptr<Entry>& entry : entries) {
    running_here.push_back(entry.get());
  }
  for (const std::shared_ptr<Entry>& entry : entries) {
    if (entry->batch) {
      if (!entry->removed.load()) Call([&] { entry->batch(events); });
    } else {
      for (const Event& event : events) {
        if (entry->removed.load()) break;
        Call([&] { entry->one(event); });
      }
    }
    running_here.erase(
        std::find(running_here.begin(), running_here.end(), entry.get()));
    absl::MutexLock lock(&mu_);
    --entry->running;
  }
}

}  // namespace internal
}  // namespace delayq
