// Copyright delayq authors.
//
// Schedule specs (cron, the @macros, @every D) and their occurrences.
//
// Properties, for every spec that parses, in one of a few time zones (with
// and without daylight saving, one that skipped a whole day):
//   - Next(t) is strictly after t (or InfiniteFuture: no more occurrence);
//   - Next is monotone: t1 <= t2 gives Next(t1) <= Next(t2);
//   - Next skips nothing: for x in [t, Next(t)), Next(x) == Next(t);
//   - LatestOccurrences(after, through, n) returns at most n times, strictly
//     increasing, in (after, through], each the Next of the one before, the
//     last one's Next past `through`, and, when fewer than n, the first one
//     is Next(after) (none was left out); none when `through` is the end
//     of time;
//   - PlanOccurrences() runs at most the policy's count (+1 on time), ends
//     at its `through`, and keeps within (done_through, now];
//   - JitterOf() is in [0, jitter).
// Every search is bounded by the code itself (400 years for a cron spec,
// doubling windows for the latest occurrences); the fuzzer's -timeout
// catches one that is not.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "delayq/schedule.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "src/common/schedule_spec.h"
#include "src/scheduler/occurrences.h"
#include "tests/fuzz/fuzz_check.h"

namespace delayq {
namespace {

using internal::ScheduleSpec;

constexpr const char* kZones[] = {
    "UTC",          "Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
    "Pacific/Apia", "Asia/Kolkata",  "America/Santiago", "Pacific/Chatham"};

// Mostly times around today (where the schedules run), sometimes anything
// absl::Time can hold.
absl::Time TimeFrom(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 9)) {
    case 0: {
      const int64_t seconds = in.ConsumeIntegral<int64_t>();
      const int nanos = in.ConsumeIntegralInRange(0, 999'999'999);
      return absl::FromUnixSeconds(seconds) + absl::Nanoseconds(nanos);
    }
    case 1:
      return in.ConsumeBool() ? absl::InfinitePast() : absl::InfiniteFuture();
    default:
      // 1970 .. 2100, to the microsecond.
      return absl::FromUnixMicros(in.ConsumeIntegralInRange<int64_t>(
          0, int64_t{4'102'444'800} * 1'000'000));
  }
}

absl::Duration SpanFrom(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0:
      return absl::Seconds(in.ConsumeIntegralInRange(0, 120));
    case 1:
      return absl::Hours(in.ConsumeIntegralInRange(0, 24 * 60));
    case 2:
      return absl::Microseconds(in.ConsumeIntegral<uint32_t>());
    default:
      return absl::Hours(in.ConsumeIntegralInRange(0, 24 * 365 * 30));
  }
}

std::string Text(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E*S%Ez", t, absl::UTCTimeZone());
}

void CheckNext(const ScheduleSpec& spec, const std::string& text,
               const absl::TimeZone& tz, absl::Time t, FuzzedDataProvider& in) {
  const std::string where = absl::StrCat("spec '", fuzz::Escaped(text), "' in ",
                                         tz.name(), " from ", Text(t));
  const absl::Time next = spec.Next(t, tz);
  FUZZ_CHECK(next > t || next == absl::InfiniteFuture(), where,
             ": Next = ", Text(next), " is not after it");

  const absl::Time later = t + SpanFrom(in);
  const absl::Time next_later = spec.Next(later, tz);
  FUZZ_CHECK(next_later >= next, where, ": Next = ", Text(next), ", but from ",
             Text(later), " Next = ", Text(next_later));

  if (next != absl::InfiniteFuture() && t != absl::InfinitePast()) {
    // A point in [t, next): what Next() gives there is next again.
    const absl::Duration gap = next - t;
    const absl::Time x = t + absl::Trunc(gap * in.ConsumeProbability<double>(),
                                         absl::Microseconds(1));
    if (x >= t && x < next) {
      const absl::Time again = spec.Next(x, tz);
      FUZZ_CHECK(again == next, where, ": Next = ", Text(next), ", but from ",
                 Text(x), " Next = ", Text(again));
    }
  }
}

void CheckLatest(const ScheduleSpec& spec, const std::string& text,
                 const absl::TimeZone& tz, absl::Time after, absl::Time through,
                 int n) {
  const std::string where = absl::StrCat(
      "spec '", fuzz::Escaped(text), "' in ", tz.name(), ": LatestOccurrences(",
      Text(after), ", ", Text(through), ", ", n, ")");
  const std::vector<absl::Time> got =
      internal::LatestOccurrences(spec, tz, after, through, n);
  FUZZ_CHECK(static_cast<int>(got.size()) <= std::max(n, 0), where, " gave ",
             got.size());
  for (size_t i = 0; i < got.size(); ++i) {
    FUZZ_CHECK(got[i] > after && got[i] <= through, where, " gave ",
               Text(got[i]), ", outside the range");
    if (i + 1 < got.size()) {
      FUZZ_CHECK(spec.Next(got[i], tz) == got[i + 1], where, " gave ",
                 Text(got[i]), " then ", Text(got[i + 1]),
                 ", not the next one");
    }
  }
  // No latest occurrences before the end of time: none are given.
  if (n < 1 || through <= after || through == absl::InfiniteFuture()) {
    FUZZ_CHECK(got.empty(), where, " gave ", got.size());
    return;
  }
  if (got.empty()) {
    const absl::Time first = spec.Next(after, tz);
    FUZZ_CHECK(first > through, where, " gave none, but ", Text(first),
               " is in the range");
    return;
  }
  FUZZ_CHECK(spec.Next(got.back(), tz) > through, where, " left out ",
             Text(spec.Next(got.back(), tz)));
  if (static_cast<int>(got.size()) < n) {
    FUZZ_CHECK(spec.Next(after, tz) == got.front(), where, " gave ", got.size(),
               " starting at ", Text(got.front()), ", but ",
               Text(spec.Next(after, tz)), " comes first");
  }
}

void CheckPlan(const ScheduleSpec& spec, const std::string& text,
               const absl::TimeZone& tz, absl::Time done_through,
               absl::Time now, const MissedPolicy& missed) {
  const internal::OccurrencePlan plan =
      internal::PlanOccurrences(spec, tz, done_through, now, missed);
  const std::string where = absl::StrCat(
      "spec '", fuzz::Escaped(text), "' in ", tz.name(), ": PlanOccurrences(",
      Text(done_through), ", ", Text(now), ", runs ", missed.Runs(), ")");
  FUZZ_CHECK(static_cast<int>(plan.run.size()) <= missed.Runs() + 1, where,
             " runs ", plan.run.size());
  if (plan.run.empty()) {
    FUZZ_CHECK(plan.through == absl::InfinitePast() ||
                   (plan.through > done_through && plan.through <= now),
               where, " runs none through ", Text(plan.through));
    return;
  }
  FUZZ_CHECK(plan.run.back() == plan.through, where, " runs up to ",
             Text(plan.run.back()), " but is through ", Text(plan.through));
  FUZZ_CHECK(plan.run.front() > done_through && plan.through <= now, where,
             " runs ", Text(plan.run.front()), "..", Text(plan.through));
}

}  // namespace
}  // namespace delayq

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace delayq;  // NOLINT: the entry point is outside the namespace
  FuzzedDataProvider in(data, size);
  const std::string text = in.ConsumeRandomLengthString(80);
  absl::TimeZone tz;
  const char* zone =
      kZones[in.ConsumeIntegralInRange<size_t>(0, std::size(kZones) - 1)];
  FUZZ_CHECK(absl::LoadTimeZone(zone, &tz), "no time zone ", zone);

  absl::StatusOr<ScheduleSpec> spec = ScheduleSpec::Parse(text);
  if (!spec.ok()) {
    FUZZ_CHECK(spec.status().code() == absl::StatusCode::kInvalidArgument,
               "spec '", fuzz::Escaped(text), "': ", spec.status().ToString());
    return 0;
  }
  CheckNext(*spec, text, tz, TimeFrom(in), in);

  const absl::Time after = TimeFrom(in);
  const absl::Time through = after + SpanFrom(in);
  CheckLatest(*spec, text, tz, after, through, in.ConsumeIntegralInRange(0, 5));

  const MissedPolicy policies[] = {MissedPolicy::Skip(), MissedPolicy::Once(),
                                   MissedPolicy::All(3)};
  CheckPlan(*spec, text, tz, after, through,
            policies[in.ConsumeIntegralInRange(0, 2)]);

  const absl::Duration jitter = SpanFrom(in);
  const absl::Duration j = internal::JitterOf(text, through, jitter);
  FUZZ_CHECK(j >= absl::ZeroDuration() &&
                 (j < jitter || (j == jitter && j == absl::ZeroDuration())),
             "JitterOf(", fuzz::Escaped(text), ", ", Text(through), ", ",
             absl::FormatDuration(jitter), ") = ", absl::FormatDuration(j));
  return 0;
}
