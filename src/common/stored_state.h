// Copyright delayq authors.
//
// A job's state as the SQL stores (SQLite, PostgreSQL) keep it: an integer
// in their jobs tables, whose statements and indexes name these values.

#ifndef DELAYQ_SRC_COMMON_STORED_STATE_H_
#define DELAYQ_SRC_COMMON_STORED_STATE_H_

#include <cstdint>

#include "delayq/job.h"

namespace delayq {
namespace internal {

inline constexpr int kStateDelayed = 0;
inline constexpr int kStateReady = 1;
inline constexpr int kStateReserved = 2;
inline constexpr int kStateDead = 3;
inline constexpr int kStateDone = 4;
inline constexpr int kStateWaiting = 5;

// The state stored as `s`; an unknown value reads as dead.
JobState StateFromInt(int64_t s);
// The value `s` is stored as.
int StateToInt(JobState s);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_STORED_STATE_H_
