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

namespace delayq {

// MemoryOptions
struct MemoryOptions {
  // What the store counts (see counts.h).
  CountsOptions counts;
};

// NewMemoryBackend()
//
// An empty in-memory store. Delayed jobs wait unsorted in time buckets of
// about half a second: adding one is O(1), cancelling one O(1) (O(b) for the
// earliest of its bucket's b jobs), and a bucket is sorted once, in
// O(b log b), when its first job comes due. Every other operation is
// O(log n) in the number of jobs (O(k log n) for calls that move k jobs).
std::unique_ptr<Backend> NewMemoryBackend(
    const MemoryOptions& options = MemoryOptions());

}  // namespace delayq

#endif  // DELAYQ_MEMORY_BACKEND_H_
