// Copyright delayq authors.

#include "src/scheduler/occurrences.h"

#include <algorithm>
#include <cstdint>
#include <deque>

#include "absl/strings/str_cat.h"

namespace delayq {
namespace internal {

std::vector<absl::Time> LatestOccurrences(const ScheduleSpec& spec,
                                          const absl::TimeZone& tz,
                                          absl::Time after, absl::Time through,
                                          int n) {
  std::deque<absl::Time> latest;
  // Nothing is the latest before the end of time (and the windows below
  // would never reach back from it).
  if (n < 1 || through <= after || through == absl::InfiniteFuture()) {
    return {};
  }
  // None in the range (a spec that never matches again, February 30th,
  // costs a 400-year search per Next()): one search says so, where the
  // doubling windows below would make one per window, some sixty.
  if (spec.Next(after, tz) > through) return {};
  for (absl::Duration window = absl::Seconds(1);; window *= 2) {
    const absl::Time from = std::max(after, through - window);
    latest.clear();
    for (absl::Time t = spec.Next(from, tz); t <= through;
         t = spec.Next(t, tz)) {
      latest.push_back(t);
      if (static_cast<int>(latest.size()) > n) latest.pop_front();
    }
    if (static_cast<int>(latest.size()) == n || from == after) break;
  }
  return std::vector<absl::Time>(latest.begin(), latest.end());
}

OccurrencePlan PlanOccurrences(const ScheduleSpec& spec,
                               const absl::TimeZone& tz,
                               absl::Time done_through, absl::Time now,
                               const MissedPolicy& missed) {
  OccurrencePlan plan;
  const int runs = missed.Runs();
  std::vector<absl::Time> latest =
      LatestOccurrences(spec, tz, done_through, now, runs + 1);
  if (latest.empty()) return plan;
  plan.through = latest.back();
  const bool on_time = now - latest.back() <= kScheduleOnTime;
  // Without one on time, every one found is missed: keep the latest `runs`.
  if (!on_time && static_cast<int>(latest.size()) > runs) {
    latest.erase(latest.begin());
  }
  plan.run = std::move(latest);
  return plan;
}

std::string OccurrenceId(absl::string_view name, absl::Time at) {
  return absl::StrCat(
      name, "@",
      absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", at, absl::UTCTimeZone()));
}

absl::Duration JitterOf(absl::string_view name, absl::Time at,
                        absl::Duration jitter) {
  const int64_t range = absl::ToInt64Microseconds(jitter);
  if (range <= 0) return absl::ZeroDuration();
  // FNV-1a over the name and the occurrence: stable across processes and
  // builds, unlike absl::Hash.
  uint64_t h = 14695981039346656037ULL;
  auto mix = [&h](uint8_t byte) { h = (h ^ byte) * 1099511628211ULL; };
  for (char c : name) mix(static_cast<uint8_t>(c));
  const int64_t us = absl::ToUnixMicros(at);
  for (int i = 0; i < 8; ++i) mix(static_cast<uint8_t>(us >> (8 * i)));
  return absl::Microseconds(
      static_cast<int64_t>(h % static_cast<uint64_t>(range)));
}

NewJob OccurrenceJob(const ScheduleRecord& s, absl::Time at) {
  const JobOptions& o = s.options.job;
  NewJob job;
  job.id = OccurrenceId(s.name, at);
  job.topic = s.topic;
  job.payload = s.payload;
  job.priority = o.priority;
  job.max_attempts = o.max_attempts;
  job.ttr = o.ttr;
  job.backoff = o.backoff;
  job.run_at = at + JitterOf(s.name, at, s.options.jitter);
  return job;
}

}  // namespace internal
}  // namespace delayq
