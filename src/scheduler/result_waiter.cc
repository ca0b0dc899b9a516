// Copyright delayq authors.

#include "src/scheduler/result_waiter.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace internal {
ResultWaiter::ResultWaiter(Clock& clock, Getter get)
    : clock_(clock), get_(std::move(get)) {}

void ResultWaiter::JobsFinished() {
  absl::MutexLock lock(&mu_);
  ++finished_;
}

absl::StatusOr<Job> ResultWaiter::Wait(absl::string_view id,
                                       absl::Duration timeout,
                                       absl::Duration poll) {
  if (timeout < absl::ZeroDuration() || poll <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "WaitForResult needs a timeout of at least 0 and a poll above 0, got ",
        absl::FormatDuration(timeout), " and ", absl::FormatDuration(poll)));
  }
  const absl::Time deadline = clock_.Now() + timeout;
  while (true) {
    uint64_t seen;
    {
      absl::MutexLock lock(&mu_);
      seen = finished_;
    }
    absl::StatusOr<Job> job = get_(id);
    if (absl::IsNotFound(job.status())) {
      return absl::NotFoundError(absl::StrCat(
          "job ", id,
          " is not in the store: never added, or gone without being kept "
          "(acknowledged without keep_for, cancelled or discarded)"));
    }
    if (!job.ok() || IsFinished(job->state)) return job;
    const absl::Time now = clock_.Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("job ", id, " is still ", JobStateName(job->state),
                       " after ", absl::FormatDuration(timeout)));
    }
    absl::MutexLock lock(&mu_);
    const auto woken = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return finished_ != seen;
    };
    clock_.AwaitWithDeadline(&mu_, absl::Condition(&woken),
                             std::min(deadline, now + poll));
  }
}

}  // namespace internal
}  // namespace delayq
