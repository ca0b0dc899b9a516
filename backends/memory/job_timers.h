// Copyright delayq authors.
//
// JobTimers — the memory store's timers, as TimingWheel policies
// (delayq/timing_wheel.h): a delayed job due at its run_at, a reservation
// at its deadline, an expiring job at its expire_at. Each kind keeps its
// jobs in a wheel of its own per topic (topic_index.h says why), keyed by
// TimeKey: the time, then enqueue order.
//
// A wheel's entry is the record's address and its links, 24 bytes: the key
// is read from the record, which keeps its times anyway. A record must not
// change the time its timer is keyed by while the timer is in a wheel; the
// store unlinks a record before it changes it.
//
// Ticks are coarse and the order is still exact: the wheel sorts the timers
// of the tick it reaches by key. A tick of 2^16 µs (about 65 ms) keeps an
// hour of delayed jobs within two cascades of their slot (4.5-minute slots
// on level 2, 4.2-second ones on level 1), and a tick's timers few enough
// to sort in a host loop's frame.

#ifndef DELAYQ_BACKENDS_MEMORY_JOB_TIMERS_H_
#define DELAYQ_BACKENDS_MEMORY_JOB_TIMERS_H_

#include <cstdint>

#include "backends/memory/job_record.h"
#include "backends/memory/time_key.h"
#include "delayq/timing_wheel.h"

namespace delayq {
namespace memory_internal {

// A tick is 2^kTickBits microseconds.
inline constexpr int kTickBits = 16;

// The tick of a time in microseconds. Every int64 time has one, in order
// (the sign bit flipped makes them unsigned), and each fits below the
// wheel's kMaxTick, so nothing is clamped.
inline uint64_t TickOfMicros(int64_t micros) {
  return (static_cast<uint64_t>(micros) ^ (uint64_t{1} << 63)) >> kTickBits;
}
static_assert(kTickBits >= 2, "ticks must stay below TimingWheel's kMaxTick");

// The policy of one kind of timer: `When` reads the time it is keyed by.
template <int64_t (JobRecord::*When)() const>
struct JobTimers : KeyedTimers<JobRecord*> {
  using Key = TimeKey;
  static Key KeyOf(JobRecord* const& r) { return {(r->*When)(), r->seq()}; }
  static uint64_t TickOf(const Key& key) { return TickOfMicros(key.at); }
  // A cascade moves timers whose records are spread over the heap: it asks
  // for each record a round before it reads the time.
  static void Prefetch(JobRecord* const& r) { __builtin_prefetch(r); }
};

using RunAtTimers = JobTimers<&JobRecord::run_at>;
using LeaseTimers = JobTimers<&JobRecord::deadline>;
using ExpiryTimers = JobTimers<&JobRecord::expire_at>;

template <typename Timers>
using JobWheel = TimingWheel<JobRecord*, Timers>;

}  // namespace memory_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_MEMORY_JOB_TIMERS_H_
