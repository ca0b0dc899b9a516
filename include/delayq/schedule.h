// Copyright delayq authors.
//
// schedule.h — periodic schedules: "every day at 03:00 Europe/Berlin",
// "every 5 minutes". A schedule is kept in the store, so every process that
// shares the store sees the same set, and each of its occurrences becomes
// one job, enqueued once however many processes run the schedule.
//
//   delayq::ScheduleOptions nightly;
//   nightly.time_zone = "Europe/Berlin";
//   nightly.missed = delayq::MissedPolicy::Once();
//   scheduler->Schedule("report.nightly", "0 3 * * *", "reports", "{}",
//                       nightly);
//
// Specs (see Scheduler::Schedule()):
//   * cron, 5 fields "minute hour day-of-month month day-of-week", or 6 with
//     a leading seconds field: `*`, values, ranges `a-b`, lists `a,b`, steps
//     `*/n` and `a-b/n`, month names JAN..DEC and day names SUN..SAT. When
//     both day fields are restricted (neither starts with `*`), a day matches
//     either; otherwise only the restricted one counts.
//   * @yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly;
//   * @every D with D an absl duration ("90s", "1h30m"), at least 1 s:
//     occurrences at whole multiples of D since the Unix epoch, so every
//     process computes the same ones.
// Cron specs run in the schedule's time zone: a time that a daylight-saving
// change skips runs once, at the first instant after the gap; a time that
// happens twice runs once, the first time. A day of month that a month does
// not have (the 31st, February 29th) does not occur in that month.

#ifndef DELAYQ_SCHEDULE_H_
#define DELAYQ_SCHEDULE_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/job.h"

namespace delayq {

// MissedPolicy
//
// What a schedule does with occurrences that passed while no scheduler ran
// it (downtime): an occurrence counts as missed when it is found more than
// kScheduleOnTime after its time. The latest occurrence, found on time, always
// runs.
//   Skip():   none of the missed ones runs;
//   Once():   one job stands for all of them (the latest);
//   All(n):   each runs, up to the latest n (1 <= n <= kMaxMissedRuns).
struct MissedPolicy {
  enum class Kind { kSkip, kOnce, kAll };

  static MissedPolicy Skip() { return {Kind::kSkip, 0}; }
  static MissedPolicy Once() { return {Kind::kOnce, 1}; }
  static MissedPolicy All(int max) { return {Kind::kAll, max}; }

  // How many missed occurrences run at most.
  int Runs() const {
    return kind == Kind::kSkip ? 0 : kind == Kind::kOnce ? 1 : max;
  }

  Kind kind = Kind::kSkip;
  int max = 0;
};

bool operator==(const MissedPolicy& a, const MissedPolicy& b);
inline bool operator!=(const MissedPolicy& a, const MissedPolicy& b) {
  return !(a == b);
}

// How late an occurrence may be found and still count as on time.
inline constexpr absl::Duration kScheduleOnTime = absl::Seconds(1);

// The largest bound of MissedPolicy::All().
inline constexpr int kMaxMissedRuns = 1000;

// MissedPolicyName()
//
// "skip", "once" or "all:N".
std::string MissedPolicyName(const MissedPolicy& policy);

// ParseMissedPolicy()
//
// The inverse of MissedPolicyName(). Returns false for any other text or a
// bound outside [1, kMaxMissedRuns].
bool ParseMissedPolicy(absl::string_view text, MissedPolicy* policy);

// ScheduleOptions
struct ScheduleOptions {
  // An IANA time zone name ("Europe/Berlin") for cron specs.
  std::string time_zone = "UTC";
  // Missed occurrences after downtime.
  MissedPolicy missed = MissedPolicy::Skip();
  // When positive, each occurrence's job is due up to this much after the
  // occurrence (an offset fixed by the schedule's name and the occurrence,
  // so every process picks the same one), to spread the load of schedules
  // that share a time. At most one hour.
  absl::Duration jitter = absl::ZeroDuration();
  // The settings of each occurrence's job: priority, ttr, max_attempts and
  // backoff. id, delay, run_at and replace must keep their defaults (the
  // schedule gives each job its id and due time).
  JobOptions job;
};

// ScheduleRecord
//
// A schedule as the store keeps it (see Backend::PutSchedule()).
struct ScheduleRecord {
  std::string name;
  std::string spec;
  std::string topic;
  std::string payload;
  ScheduleOptions options;
  // Every occurrence at or before this time was enqueued or passed over (a
  // new schedule, or one given a new spec or time zone, starts it at the time
  // it was stored). So it is the time of the last occurrence enqueued, once
  // one was.
  absl::Time done_through = absl::InfinitePast();
  // Changes with every store call that changes the schedule, so that an
  // occurrence is enqueued only by a call that saw the schedule as it is.
  int64_t revision = 0;
};

// ScheduleInfo
//
// A schedule and when it next runs, as Scheduler::Schedules() lists it.
struct ScheduleInfo {
  ScheduleRecord record;
  // The next occurrence after record.done_through; absl::InfiniteFuture()
  // when there is none.
  absl::Time next_run = absl::InfiniteFuture();
};

}  // namespace delayq

#endif  // DELAYQ_SCHEDULE_H_
