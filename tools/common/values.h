// Copyright delayq authors.
//
// Reading and writing the values the command line deals in: durations,
// times, backoff specs, counts; and, from text.h, payloads and JSON text for
// --json output.

#ifndef DELAYQ_TOOLS_COMMON_VALUES_H_
#define DELAYQ_TOOLS_COMMON_VALUES_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/job.h"
#include "tools/common/text.h"  // IWYU pragma: export

namespace delayq {
namespace cli {

// "90s", "30m", "1h30m", "250ms" (absl::ParseDuration). InvalidArgument
// naming `flag` (e.g. "--delay") for anything else, or a negative duration.
absl::StatusOr<absl::Duration> ParseDurationValue(absl::string_view flag,
                                                  absl::string_view text);

// An RFC 3339 time: 2026-12-01T10:00:00Z, 2026-12-01T11:00:00+01:00.
absl::StatusOr<absl::Time> ParseTimeValue(absl::string_view flag,
                                          absl::string_view text);

// A whole number in [min, max].
absl::StatusOr<int> ParseIntValue(absl::string_view what,
                                  absl::string_view text, int min, int max);

// The state names ParseJobState() reads, for messages: "delayed, ready,
// reserved, dead, done or waiting".
inline constexpr char kJobStatesText[] =
    "delayed, ready, reserved, dead, done or waiting";

// "fixed:DELAY" or "exp:BASE[:MAX]" (MAX defaults to 10m, or
// to BASE when BASE is longer).
absl::StatusOr<Backoff> ParseBackoffValue(absl::string_view text);

// The inverse of ParseBackoffValue(): "fixed:10s", "exp:1s:10m".
std::string BackoffText(const Backoff& backoff);

// "rate 50/1s, burst 5, concurrency 10" (the parts that are set).
std::string LimitText(const TopicLimit& limit);

// "1h30m", "250ms", "0s".
std::string DurationText(absl::Duration d);

// 2026-12-01T10:00:00.000Z (RFC 3339, milliseconds rounded down).
std::string UtcText(absl::Time t);
// The same, appended to `out`.
void AppendUtcText(absl::Time t, std::string* out);

// "2026-12-01 11:00:00 CET" in the local time zone.
std::string LocalText(absl::Time t);

// "in 29m59s" or "3s ago", rounded to what a person reads.
std::string RelativeText(absl::Time t, absl::Time now);

}  // namespace cli
}  // namespace delayq

#endif  // DELAYQ_TOOLS_COMMON_VALUES_H_
