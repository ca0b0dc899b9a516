// Copyright delayq authors.
//
// How every store keeps a Backoff's kind and jitter in one integer column
// or record value, so a job's backoff reads back as it was written. Codes 0
// (fixed) and 1 (exponential) are what stores wrote before jitter existed;
// jitter adds twice its millionths: code = kind + 2 * round(jitter * 1e6).

#ifndef DELAYQ_SRC_COMMON_BACKOFF_CODE_H_
#define DELAYQ_SRC_COMMON_BACKOFF_CODE_H_

#include <cstdint>

#include "absl/time/time.h"
#include "delayq/job.h"

namespace delayq {
namespace internal {

// The code of `backoff`'s kind and jitter (jitter clamped to [0, 1]).
int64_t BackoffCode(const Backoff& backoff);

// The backoff with `code`'s kind and jitter and the given durations.
Backoff BackoffFromCode(int64_t code, absl::Duration base, absl::Duration max);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_BACKOFF_CODE_H_
