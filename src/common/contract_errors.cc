// Copyright delayq authors.

#include "src/common/contract_errors.h"

#include "absl/strings/str_cat.h"

namespace delayq {
namespace internal {

std::string DependencyFailed(absl::string_view id) {
  return absl::StrCat("dependency '", id, "' failed");
}

std::string DependencyCancelled(absl::string_view id) {
  return absl::StrCat("dependency '", id, "' was cancelled");
}

absl::Status NoSuchDependency(absl::string_view job,
                              absl::string_view dependency) {
  return absl::NotFoundError(absl::StrCat(
      "job '", job, "' waits for '", dependency,
      "', which names no job of the store: a job may only wait for jobs "
      "stored before it (a done one kept by keep_for counts as met)"));
}

absl::Status NoSuchBatch(absl::string_view id) {
  return absl::NotFoundError(absl::StrCat("no batch with id '", id, "'"));
}

absl::Status BatchClosed(absl::string_view id) {
  return absl::FailedPreconditionError(
      absl::StrCat("batch '", id, "' is closed: it takes no more jobs"));
}

absl::Status NoSuchJob(absl::string_view id) {
  return absl::NotFoundError(absl::StrCat("no job with id '", id, "'"));
}

absl::Status IdInUse(absl::string_view id) {
  return absl::AlreadyExistsError(
      absl::StrCat("job id '", id,
                   "' is already in use by a live job, or held by the dedup "
                   "window of a finished one"));
}

absl::Status StaleLease(absl::string_view id) {
  return absl::FailedPreconditionError(absl::StrCat(
      "lease of job '", id,
      "' is not current: it ran out, or the job was acked, failed, "
      "released or cancelled"));
}

absl::Status NotDead(absl::string_view id, absl::string_view state) {
  return absl::FailedPreconditionError(
      absl::StrCat("job '", id, "' is ", state, ", not dead"));
}

absl::Status NotDelayed(absl::string_view id, absl::string_view state) {
  return absl::FailedPreconditionError(
      absl::StrCat("job '", id, "' is ", state,
                   ", not delayed: only a job that waits "
                   "for its time (or its retry) can run now"));
}

absl::Status NotReplaceable(absl::string_view id, absl::string_view state) {
  return absl::FailedPreconditionError(
      absl::StrCat("job '", id, "' is ", state,
                   ": only a delayed or ready job can be replaced"));
}

absl::Status OtherTopic(absl::string_view id, absl::string_view topic) {
  return absl::FailedPreconditionError(
      absl::StrCat("job '", id, "' is of topic '", topic, "'"));
}

absl::Status NoSuchSchedule(absl::string_view name) {
  return absl::NotFoundError(absl::StrCat("no schedule named '", name, "'"));
}

absl::Status ScheduleMoved(absl::string_view name) {
  return absl::AlreadyExistsError(
      absl::StrCat("schedule '", name,
                   "' changed or fired since it was read: its occurrences "
                   "are enqueued already"));
}

}  // namespace internal
}  // namespace delayq
