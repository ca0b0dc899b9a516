// Copyright delayq authors.
//
// Which occurrences of a schedule run, and as which jobs: the pure part of
// running schedules (schedule_runner.h does the store calls).

#ifndef DELAYQ_SRC_SCHEDULER_OCCURRENCES_H_
#define DELAYQ_SRC_SCHEDULER_OCCURRENCES_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/schedule.h"
#include "src/common/schedule_spec.h"

namespace delayq {
namespace internal {

// LatestOccurrences()
//
// The latest `n` (or fewer) occurrences in (after, through], earliest first.
// Looks back from `through` in windows that double, so a schedule that
// missed a year of occurrences costs about `n` steps, not a year's worth.
std::vector<absl::Time> LatestOccurrences(const ScheduleSpec& spec,
                                          const absl::TimeZone& tz,
                                          absl::Time after, absl::Time through,
                                          int n);

// OccurrencePlan
//
// What to do for a schedule at `now`.
struct OccurrencePlan {
  // The occurrences to enqueue, earliest first.
  std::vector<absl::Time> run;
  // The new done_through: the latest occurrence at or before `now`;
  // absl::InfinitePast() when none is due (nothing to do).
  absl::Time through = absl::InfinitePast();
};

// PlanOccurrences()
//
// The occurrences after `done_through` and at or before `now`: the latest
// runs when it is on time (at most kScheduleOnTime before `now`); of the
// others (missed), `missed` says how many run, the latest first.
OccurrencePlan PlanOccurrences(const ScheduleSpec& spec,
                               const absl::TimeZone& tz,
                               absl::Time done_through, absl::Time now,
                               const MissedPolicy& missed);

// OccurrenceId()
//
// The id of an occurrence's job: "<name>@<time in UTC, RFC 3339>", e.g.
// "nightly@2026-03-29T01:00:00Z". Every process derives the same one.
std::string OccurrenceId(absl::string_view name, absl::Time at);

// JitterOf()
//
// How long after the occurrence its job is due: in [0, jitter), fixed by
// the name and the occurrence (the same in every process).
absl::Duration JitterOf(absl::string_view name, absl::Time at,
                        absl::Duration jitter);

// OccurrenceJob()
//
// The job of schedule `s`'s occurrence at `at`.
NewJob OccurrenceJob(const ScheduleRecord& s, absl::Time at);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_OCCURRENCES_H_
