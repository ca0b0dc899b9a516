// Copyright delayq authors.
//
// TimeKey — a job in an index ordered by a time: a delayed job by run_at, a
// reservation by deadline, an expiring job by expire_at. Equal times keep
// enqueue order, which is read from the record only then (ties are rare, and
// the key stays two words).

#ifndef DELAYQ_BACKENDS_MEMORY_TIME_KEY_H_
#define DELAYQ_BACKENDS_MEMORY_TIME_KEY_H_

#include <cstdint>

#include "backends/memory/job_record.h"

namespace delayq {
namespace memory_internal {

struct TimeKey {
  int64_t at;
  JobRecord* record;
};

struct TimeOrder {
  bool operator()(const TimeKey& a, const TimeKey& b) const {
    if (a.at != b.at) return a.at < b.at;
    return a.record->seq() < b.record->seq();
  }
};

}  // namespace memory_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_MEMORY_TIME_KEY_H_
