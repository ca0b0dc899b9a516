// Copyright delayq authors.
//
// memory_backend.h — a Backend that keeps everything in this process's memory.
//
// For unit tests (with a SimulatedClock it makes queue logic deterministic and
// needs no server) and for game servers whose jobs need not survive a restart.
// Nothing is durable: the jobs die with the object. Thread-safe.
//
//   auto scheduler = delayq::Scheduler::Create(delayq::NewMemoryBackend());

#ifndef DELAYQ_MEMORY_BACKEND_H_
#define DELAYQ_MEMORY_BACKEND_H_

#include <memory>

#include "delayq/backend.h"
#include "delayq/counts.h"
#include "delayq/event_log.h"

namespace delayq {

// MemoryOptions
struct MemoryOptions {
  // What the store counts (see counts.h).
  CountsOptions counts;
  // How many events the store's log keeps (see event_log.h).
  EventLogOptions events;
};

// NewMemoryBackend()
//
// An empty in-memory store. Its pending timers (delayed jobs, leases,
// expiries) wait in hierarchical timing wheels (delayq/timing_wheel.h), one
// per topic and kind. Adding or cancelling one is O(1), but for a timer of
// the tick being taken from (ticks are about 65 ms): O(log k) among that
// tick's k timers, and O(k) to close the gap when it is not the next due.
// A timer is re-sorted at most once per level on its way to its time, and
// the timers of a tick are sorted once, when the first of them comes due.
// Every other operation is O(log n) in the number of jobs (O(k log n) for
// calls that move k jobs).
std::unique_ptr<Backend> NewMemoryBackend(
    const MemoryOptions& options = MemoryOptions());

}  // namespace delayq

#endif  // DELAYQ_MEMORY_BACKEND_H_
