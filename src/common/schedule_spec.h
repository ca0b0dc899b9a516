// Copyright delayq authors.
//
// ScheduleSpec — a parsed schedule spec (cron, @daily and friends, or
// @every D; the syntax is in delayq/schedule.h) and its occurrences in a
// time zone.
//
//   absl::StatusOr<ScheduleSpec> spec = ScheduleSpec::Parse("30 2 * * *");
//   absl::Time next = spec->Next(now, berlin);  // 02:30, or 03:00 on the
//                                               // day the clocks skip 02:xx

#ifndef DELAYQ_SRC_COMMON_SCHEDULE_SPEC_H_
#define DELAYQ_SRC_COMMON_SCHEDULE_SPEC_H_

#include <bitset>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace delayq {
namespace internal {

class ScheduleSpec {
 public:
  // Parse()
  //
  // InvalidArgument naming the field at fault for a malformed spec.
  static absl::StatusOr<ScheduleSpec> Parse(absl::string_view spec);

  // Next()
  //
  // The first occurrence strictly after `after`, with cron fields read in
  // `tz` (an @every spec ignores it): a local time skipped by a
  // daylight-saving change occurs at the first instant after the gap, and
  // only once however many skipped times match; a local time that happens
  // twice occurs the first time only. absl::InfiniteFuture() when the spec
  // never matches again (February 30th) within the next 400 years.
  absl::Time Next(absl::Time after, const absl::TimeZone& tz) const;

 private:
  // Field values as bit positions: seconds and minutes 0-59, hours 0-23,
  // days 1-31, months 1-12, weekdays 0-6 (Sunday 0).
  using Bits = std::bitset<64>;

  ScheduleSpec() = default;

  absl::Time NextEvery(absl::Time after) const;
  absl::Time NextCron(absl::Time after, const absl::TimeZone& tz) const;
  bool DayMatches(absl::CivilDay day) const;

  // Nonzero for @every.
  absl::Duration every_ = absl::ZeroDuration();
  Bits seconds_, minutes_, hours_, days_, months_, weekdays_;
  // Whether each day field was restricted (did not start with '*'): when
  // both are, a day matching either one matches.
  bool days_restricted_ = false;
  bool weekdays_restricted_ = false;
};

// ParseTimeZone()
//
// The named IANA zone. InvalidArgument when the system's tz database has
// no such zone.
absl::StatusOr<absl::TimeZone> ParseTimeZone(absl::string_view name);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_SCHEDULE_SPEC_H_
