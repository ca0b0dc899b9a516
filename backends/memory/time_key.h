// Copyright delayq authors.
//
// TimeKey — the exact order of the memory store's timers: a time in
// microseconds (a delayed job's run_at, a reservation's deadline, an
// expiring job's expire_at), then enqueue order, so that jobs due at the
// same time keep the order they were enqueued in.

#ifndef DELAYQ_BACKENDS_MEMORY_TIME_KEY_H_
#define DELAYQ_BACKENDS_MEMORY_TIME_KEY_H_

#include <cstdint>

namespace delayq {
namespace memory_internal {

struct TimeKey {
  int64_t at;
  uint64_t seq;

  friend bool operator<(const TimeKey& a, const TimeKey& b) {
    if (a.at != b.at) return a.at < b.at;
    return a.seq < b.seq;
  }
};

}  // namespace memory_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_MEMORY_TIME_KEY_H_
