// Copyright delayq authors.
//
// The job a store is given for an enqueue: JobOptions turned into NewJob
// fields, said once for Scheduler::Enqueue() and the stores'
// EnqueueInTransaction(), so that a job is the same whichever way it came.

#ifndef DELAYQ_SRC_COMMON_NEW_JOB_H_
#define DELAYQ_SRC_COMMON_NEW_JOB_H_

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/job.h"

namespace delayq {
namespace internal {

// NewJobOf()
//
// The job for `payload` of `topic` with `options`, due at `run_at` and
// lapsing at `expire_at` (both resolved by the caller: they depend on its
// clock). Every other field comes from `options`; the id is left empty.
// REQUIRES: options passed ValidateOptions().
NewJob NewJobOf(absl::string_view topic, absl::string_view payload,
                const JobOptions& options, absl::Time run_at,
                absl::Time expire_at);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_NEW_JOB_H_
