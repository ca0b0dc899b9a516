// Copyright delayq authors.
//
// The errors of the Backend contract (delayq/backend.h), worded once for
// every store, the scheduler and the command-line program: the same mistake
// reads the same whichever store made it.

#ifndef DELAYQ_SRC_COMMON_CONTRACT_ERRORS_H_
#define DELAYQ_SRC_COMMON_CONTRACT_ERRORS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "delayq/backend.h"

namespace delayq {
namespace internal {

// A dead job's last_error when its last lease ran out.
inline constexpr char kLeaseExpired[] = "lease expired";

// A dead job's last_error when its expire_at came before a reservation.
inline constexpr char kJobExpired[] = "expired";

// A dependant's last_error when its dependency `id` went dead (kFail).
std::string DependencyFailed(absl::string_view id);
// The same when its dependency `id` left the store unacknowledged.
std::string DependencyCancelled(absl::string_view id);
// NotFound: Add() of a job that waits for `dependency`, which names no job
// of the store (nor an earlier one of the batch).
absl::Status NoSuchDependency(absl::string_view job,
                              absl::string_view dependency);

// NotFound: no batch has the id (OpenBatch()).
absl::Status NoSuchBatch(absl::string_view id);
// FailedPrecondition: Add() of a job for a closed batch.
absl::Status BatchClosed(absl::string_view id);

// NotFound: the id names no live job.
absl::Status NoSuchJob(absl::string_view id);

// AlreadyExists: Add() with the id of a live job, or one a dedup window
// holds.
absl::Status IdInUse(absl::string_view id);

// FailedPrecondition: a lease that is not the job's current reservation.
absl::Status StaleLease(absl::string_view id);

// FailedPrecondition: KickJob() of a job that is not dead; `state` is its
// state's name ("ready").
absl::Status NotDead(absl::string_view id, absl::string_view state);

// FailedPrecondition: PromoteJob() of a job that is not delayed; `state`
// is its state's name.
absl::Status NotDelayed(absl::string_view id, absl::string_view state);

// FailedPrecondition: Replace() of a job that is reserved or dead (`state`
// its state's name).
absl::Status NotReplaceable(absl::string_view id, absl::string_view state);

// FailedPrecondition: Replace() naming a topic the job is not of.
absl::Status OtherTopic(absl::string_view id, absl::string_view topic);

// NotFound: no schedule has the name.
absl::Status NoSuchSchedule(absl::string_view name);

// AlreadyExists: FireSchedule() of a schedule whose revision moved on.
absl::Status ScheduleMoved(absl::string_view name);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_CONTRACT_ERRORS_H_
