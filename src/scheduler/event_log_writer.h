// Copyright delayq authors.
//
// EventLogWriter — takes the scheduler's events to the store's event log
// (delayq/event_log.h), so every process's transitions read the same from
// any of them. Thread-safe.
//
// A transition does not wait for its event: events are buffered and
// written in batches, by a thread of the writer's own while the scheduler's
// threads run (Start()), which writes as soon as anything is buffered (what
// comes in meanwhile goes in the next batch, so a busy process writes one
// batch per store call, not one per event); otherwise by Tick() and when
// the buffer reaches kFlushAt, on the thread that filled it; and always by
// Close(). A host loop that runs no threads thus pays one store call per
// kFlushAt events. The buffer holds at most max_buffered events: when the
// store cannot keep up (or is down) the oldest are dropped and reported.
//
// An event's strings go into the memory of an event written before: the
// buffer and the batch being written swap, and their events stay, to be
// written over. So a busy process buffers its events without allocating
// or freeing, where copies made and freed for every event (on two threads)
// had cost a memory store more than its own work.

#ifndef DELAYQ_SRC_SCHEDULER_EVENT_LOG_WRITER_H_
#define DELAYQ_SRC_SCHEDULER_EVENT_LOG_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "delayq/backend.h"
#include "delayq/event.h"
#include "delayq/event_log.h"

namespace delayq {
namespace internal {

// "<host name>:<pid>", the name a process gives its events unless told
// otherwise.
std::string DefaultProcessName();

class EventLogWriter {
 public:
  // Events a thread-less writer buffers before it writes them itself.
  static constexpr size_t kFlushAt = 256;
  // The most spent events a batch keeps for their memory (each buffer may
  // hold as many): a burst's go with its batch.
  static constexpr size_t kKeptSpent = 4 * kFlushAt;
  // The most events buffered unless told otherwise.
  static constexpr size_t kDefaultMaxBuffered = 100'000;
  // How long the thread waits after the store refused a batch.
  static constexpr absl::Duration kRetryAfter = absl::Milliseconds(200);

  // `on_error` hears of a batch the store refused (it is dropped) and of
  // events dropped from a full buffer; it runs with no lock held.
  EventLogWriter(Backend* backend, std::string who, size_t max_buffered,
                 std::function<void(const absl::Status&)> on_error);
  // Close().
  ~EventLogWriter();

  EventLogWriter(const EventLogWriter&) = delete;
  EventLogWriter& operator=(const EventLogWriter&) = delete;

  // Buffers `events` (one call's, as EventHub tells them).
  void Add(absl::Span<const Event> events);
  // Writes what is buffered, on the calling thread; the store's error when
  // it refused a batch (also told to on_error).
  absl::Status Flush();
  // Starts the writing thread (no-op when running).
  void Start();
  // Stops the thread, if any, and writes what is buffered.
  void Close();

  // Events dropped so far (a full buffer, or a batch the store refused).
  int64_t dropped() const;

 private:
  void Run();
  enum class Wrote { kNothing, kBatch, kFailed };
  // Writes one batch taken from the buffer; sets `*error` (when not null)
  // to the store's error when it refused it.
  Wrote WriteBatch(absl::Status* error = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_, write_mu_);

  Backend* const backend_;
  const std::string who_;
  const size_t max_buffered_;
  const std::function<void(const absl::Status&)> on_error_;

  mutable absl::Mutex mu_;
  // The events buffered are the first `buffered_` of buffer_; those after
  // are spent, kept for their memory.
  std::vector<LoggedEvent> buffer_ ABSL_GUARDED_BY(mu_);
  size_t buffered_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  // Dropped from a full buffer and not yet reported.
  int64_t unreported_ ABSL_GUARDED_BY(mu_) = 0;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Set once the store says it keeps no log: nothing is buffered after.
  bool unsupported_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
  // One batch is written at a time, so batches reach the store in order.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // The batch being written: the buffer of before, swapped out.
  std::vector<LoggedEvent> batch_ ABSL_GUARDED_BY(write_mu_);
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_EVENT_LOG_WRITER_H_
