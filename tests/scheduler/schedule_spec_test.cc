// Copyright delayq authors.
//
// ScheduleSpec: parsing, and occurrences across daylight-saving changes in
// both directions (Europe/Berlin, America/New_York), month ends and leap
// days. Every time is written with its UTC offset, so a local time that
// happens twice is named exactly.

#include "src/common/schedule_spec.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace internal {
namespace {

using ::testing::HasSubstr;

constexpr char kFormat[] = "%Y-%m-%d %H:%M:%S %z";

absl::TimeZone Zone(const std::string& name) {
  absl::StatusOr<absl::TimeZone> tz = ParseTimeZone(name);
  EXPECT_TRUE(tz.ok()) << tz.status();
  return tz.ok() ? *tz : absl::UTCTimeZone();
}

absl::Time Parse(const std::string& text) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime(kFormat, text, &t, &err)) << text << ": " << err;
  return t;
}

// The occurrence of `spec` after `after`, written in `zone`.
std::string Next(const std::string& spec, const std::string& zone,
                 const std::string& after) {
  absl::StatusOr<ScheduleSpec> parsed = ScheduleSpec::Parse(spec);
  if (!parsed.ok()) return parsed.status().ToString();
  const absl::TimeZone tz = Zone(zone);
  const absl::Time t = parsed->Next(Parse(after), tz);
  if (t == absl::InfiniteFuture()) return "never";
  return absl::FormatTime(kFormat, t, tz);
}

struct Case {
  const char* spec;
  const char* zone;
  const char* after;
  const char* next;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << "'" << c.spec << "' in " << c.zone << " after " << c.after;
}

class NextTest : public ::testing::TestWithParam<Case> {};

TEST_P(NextTest, IsTheFirstOccurrenceAfter) {
  const Case& c = GetParam();
  EXPECT_EQ(Next(c.spec, c.zone, c.after), c.next);
}

INSTANTIATE_TEST_SUITE_P(
    Cron, NextTest,
    ::testing::Values(
        Case{"*/15 * * * *", "UTC", "2026-01-01 00:00:00 +0000",
             "2026-01-01 00:15:00 +0000"},
        Case{"*/15 * * * *", "UTC", "2026-01-01 00:14:59 +0000",
             "2026-01-01 00:15:00 +0000"},
        Case{"0 3 * * *", "UTC", "2026-01-01 03:00:00 +0000",
             "2026-01-02 03:00:00 +0000"},
        Case{"0 8-18/4 * * *", "UTC", "2026-01-01 08:00:00 +0000",
             "2026-01-01 12:00:00 +0000"},
        Case{"0 8-18/4 * * *", "UTC", "2026-01-01 16:00:00 +0000",
             "2026-01-02 08:00:00 +0000"},
        Case{"5/20 * * * *", "UTC", "2026-01-01 00:26:00 +0000",
             "2026-01-01 00:45:00 +0000"},
        Case{"0,30 9,17 * * *", "UTC", "2026-01-01 09:30:00 +0000",
             "2026-01-01 17:00:00 +0000"},
        // Seconds.
        Case{"*/20 * * * * *", "UTC", "2026-01-01 00:00:05 +0000",
             "2026-01-01 00:00:20 +0000"},
        Case{"30 0 0 1 1 *", "UTC", "2026-01-01 00:00:30 +0000",
             "2027-01-01 00:00:30 +0000"},
        // Names, case-insensitive; 7 is Sunday as 0 is.
        Case{"0 12 1 JAN,jul *", "UTC", "2026-02-01 00:00:00 +0000",
             "2026-07-01 12:00:00 +0000"},
        Case{"0 9 * * MON-FRI", "UTC", "2026-01-02 09:00:00 +0000",
             "2026-01-05 09:00:00 +0000"},
        Case{"0 0 * * 7", "UTC", "2026-01-01 00:00:00 +0000",
             "2026-01-04 00:00:00 +0000"},
        Case{"0 0 * * sun", "UTC", "2026-01-04 00:00:00 +0000",
             "2026-01-11 00:00:00 +0000"},
        // Both day fields restricted: either matches (the 13th or a Friday).
        Case{"0 0 13 * 5", "UTC", "2026-02-01 00:00:00 +0000",
             "2026-02-06 00:00:00 +0000"},
        Case{"0 0 13 * 5", "UTC", "2026-02-06 00:00:00 +0000",
             "2026-02-13 00:00:00 +0000"},
        Case{"0 0 13 * 5", "UTC", "2026-02-13 00:00:00 +0000",
             "2026-02-20 00:00:00 +0000"},
        // A day field that starts with '*' is unrestricted: both must match.
        Case{"0 0 */2 * 1", "UTC", "2026-01-01 00:00:00 +0000",
             "2026-01-05 00:00:00 +0000"},
        Case{"0 0 */2 * *", "UTC", "2026-01-31 00:00:00 +0000",
             "2026-02-01 00:00:00 +0000"},
        // Month ends: the 31st only in months that have one.
        Case{"0 0 31 * *", "UTC", "2026-01-31 00:00:00 +0000",
             "2026-03-31 00:00:00 +0000"},
        Case{"0 0 31 * *", "UTC", "2026-03-31 00:00:00 +0000",
             "2026-05-31 00:00:00 +0000"},
        Case{"0 0 31 * *", "UTC", "2026-07-31 00:00:00 +0000",
             "2026-08-31 00:00:00 +0000"},
        Case{"0 0 30 * *", "UTC", "2026-01-30 00:00:00 +0000",
             "2026-03-30 00:00:00 +0000"},
        Case{"0 0 L * *", "UTC", "2026-01-30 00:00:00 +0000",
             "INVALID_ARGUMENT: day-of-month field 'L' of spec '0 0 L * *' "
             "has 'L', not a number"},
        // February 29th: leap years only.
        Case{"0 0 29 2 *", "UTC", "2026-01-01 00:00:00 +0000",
             "2028-02-29 00:00:00 +0000"},
        Case{"0 0 29 2 *", "UTC", "2028-02-29 00:00:00 +0000",
             "2032-02-29 00:00:00 +0000"},
        Case{"0 0 29 2 *", "UTC", "2096-03-01 00:00:00 +0000",
             "2104-02-29 00:00:00 +0000"},
        Case{"0 0 30 2 *", "UTC", "2026-01-01 00:00:00 +0000", "never"},
        Case{"0 0 31 4,6,9,11 *", "UTC", "2026-01-01 00:00:00 +0000",
             "never"}));

INSTANTIATE_TEST_SUITE_P(
    Macros, NextTest,
    ::testing::Values(
        Case{"@hourly", "UTC", "2026-01-01 10:15:00 +0000",
             "2026-01-01 11:00:00 +0000"},
        Case{"@daily", "Europe/Berlin", "2026-01-01 10:15:00 +0100",
             "2026-01-02 00:00:00 +0100"},
        Case{"@midnight", "UTC", "2026-01-01 00:00:00 +0000",
             "2026-01-02 00:00:00 +0000"},
        Case{"@weekly", "UTC", "2026-01-01 00:00:00 +0000",
             "2026-01-04 00:00:00 +0000"},
        Case{"@monthly", "America/New_York", "2026-01-15 00:00:00 -0500",
             "2026-02-01 00:00:00 -0500"},
        Case{"@yearly", "UTC", "2026-01-01 00:00:00 +0000",
             "2027-01-01 00:00:00 +0000"},
        Case{"@annually", "UTC", "2026-06-01 00:00:00 +0000",
             "2027-01-01 00:00:00 +0000"},
        // Whole multiples of the interval since the epoch, in any zone.
        Case{"@every 90s", "UTC", "1970-01-01 00:01:40 +0000",
             "1970-01-01 00:03:00 +0000"},
        Case{"@every 90s", "UTC", "1970-01-01 00:03:00 +0000",
             "1970-01-01 00:04:30 +0000"},
        Case{"@every 1h30m", "UTC", "2026-01-01 00:00:00 +0000",
             "2026-01-01 01:30:00 +0000"},
        Case{"@every 1s", "Europe/Berlin", "2026-03-29 01:59:59 +0100",
             "2026-03-29 03:00:00 +0200"}));

INSTANTIATE_TEST_SUITE_P(
    Berlin, NextTest,
    ::testing::Values(
        // Spring forward on 2026-03-29: 02:00 CET becomes 03:00 CEST, so
        // 02:xx does not exist. It runs at the end of the gap, once.
        Case{"30 2 * * *", "Europe/Berlin", "2026-03-28 03:00:00 +0100",
             "2026-03-29 03:00:00 +0200"},
        Case{"30 2 * * *", "Europe/Berlin", "2026-03-29 03:00:00 +0200",
             "2026-03-30 02:30:00 +0200"},
        Case{"*/10 2 * * *", "Europe/Berlin", "2026-03-29 01:59:00 +0100",
             "2026-03-29 03:00:00 +0200"},
        Case{"*/10 2 * * *", "Europe/Berlin", "2026-03-29 03:00:00 +0200",
             "2026-03-30 02:00:00 +0200"},
        // 03:00 exists, and is the instant the gap ends: one run for both.
        Case{"0 2,3 * * *", "Europe/Berlin", "2026-03-29 01:00:00 +0100",
             "2026-03-29 03:00:00 +0200"},
        Case{"0 2,3 * * *", "Europe/Berlin", "2026-03-29 03:00:00 +0200",
             "2026-03-30 02:00:00 +0200"},
        Case{"0 * * * *", "Europe/Berlin", "2026-03-29 01:00:00 +0100",
             "2026-03-29 03:00:00 +0200"},
        Case{"@daily", "Europe/Berlin", "2026-03-29 00:00:00 +0100",
             "2026-03-30 00:00:00 +0200"},
        // Fall back on 2026-10-25: 03:00 CEST becomes 02:00 CET, so 02:xx
        // happens twice. It runs the first time only.
        Case{"30 2 * * *", "Europe/Berlin", "2026-10-25 00:00:00 +0200",
             "2026-10-25 02:30:00 +0200"},
        Case{"30 2 * * *", "Europe/Berlin", "2026-10-25 02:30:00 +0200",
             "2026-10-26 02:30:00 +0100"},
        Case{"30 2 * * *", "Europe/Berlin", "2026-10-25 02:10:00 +0100",
             "2026-10-26 02:30:00 +0100"},
        Case{"0 * * * *", "Europe/Berlin", "2026-10-25 02:00:00 +0200",
             "2026-10-25 03:00:00 +0100"},
        Case{"0 3 * * *", "Europe/Berlin", "2026-10-24 03:00:00 +0200",
             "2026-10-25 03:00:00 +0100"}));

INSTANTIATE_TEST_SUITE_P(
    NewYork, NextTest,
    ::testing::Values(
        // Spring forward on 2026-03-08: 02:00 EST becomes 03:00 EDT.
        Case{"30 2 * * *", "America/New_York", "2026-03-07 12:00:00 -0500",
             "2026-03-08 03:00:00 -0400"},
        Case{"0 2 * * *", "America/New_York", "2026-03-08 01:59:59 -0500",
             "2026-03-08 03:00:00 -0400"},
        Case{"0 2 * * *", "America/New_York", "2026-03-08 03:00:00 -0400",
             "2026-03-09 02:00:00 -0400"},
        Case{"59 1 * * *", "America/New_York", "2026-03-07 12:00:00 -0500",
             "2026-03-08 01:59:00 -0500"},
        // Fall back on 2026-11-01: 02:00 EDT becomes 01:00 EST, so 01:xx
        // happens twice.
        Case{"30 1 * * *", "America/New_York", "2026-11-01 00:00:00 -0400",
             "2026-11-01 01:30:00 -0400"},
        Case{"30 1 * * *", "America/New_York", "2026-11-01 01:30:00 -0400",
             "2026-11-02 01:30:00 -0500"},
        Case{"30 1 * * *", "America/New_York", "2026-11-01 01:10:00 -0500",
             "2026-11-02 01:30:00 -0500"},
        Case{"*/30 * * * *", "America/New_York", "2026-11-01 01:30:00 -0400",
             "2026-11-01 02:00:00 -0500"},
        Case{"0 2 * * *", "America/New_York", "2026-10-31 02:00:00 -0400",
             "2026-11-01 02:00:00 -0500"}));

// A day of 23 hours, then one of 25: consecutive occurrences of a daily
// schedule are a calendar day apart, whatever the elapsed time.
TEST(ScheduleSpecTest, DailyOccurrencesFollowTheLocalCalendar) {
  const absl::TimeZone berlin = Zone("Europe/Berlin");
  ASSERT_OK_AND_ASSIGN(ScheduleSpec spec, ScheduleSpec::Parse("0 12 * * *"));
  absl::Time t = Parse("2026-03-28 12:00:00 +0100");
  const absl::Time spring = spec.Next(t, berlin);
  EXPECT_EQ(spring - t, absl::Hours(23));
  t = Parse("2026-10-24 12:00:00 +0200");
  EXPECT_EQ(spec.Next(t, berlin) - t, absl::Hours(25));
}

struct Bad {
  const char* spec;
  const char* names;  // what the message must name
};

class ParseErrorTest : public ::testing::TestWithParam<Bad> {};

TEST_P(ParseErrorTest, NamesTheField) {
  absl::StatusOr<ScheduleSpec> spec = ScheduleSpec::Parse(GetParam().spec);
  ASSERT_FALSE(spec.ok()) << GetParam().spec;
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr(GetParam().names));
}

INSTANTIATE_TEST_SUITE_P(
    Cron, ParseErrorTest,
    ::testing::Values(
        Bad{"61 * * * *", "minute field '61'"},
        Bad{"* 24 * * *", "hour field '24'"},
        Bad{"* * 0 * *", "day-of-month field '0'"},
        Bad{"* * 32 * *", "outside 1-31"},
        Bad{"* * * 13 *", "month field '13'"},
        Bad{"* * * FOO *", "month field 'FOO'"},
        Bad{"* * * * 8", "day-of-week field '8'"},
        Bad{"* * * * MONDAY", "day-of-week field 'MONDAY'"},
        Bad{"60 * * * * *", "second field '60'"},
        Bad{"5-1 * * * *", "backward range '5-1'"},
        Bad{"*/0 * * * *", "bad step '0'"},
        Bad{"1,,2 * * * *", "empty list item"},
        Bad{"-1 * * * *", "minute field '-1'"}, Bad{"* * * *", "has 4 fields"},
        Bad{"* * * * * * *", "has 7 fields"}, Bad{"", "has 0 fields"},
        Bad{"@often", "unknown spec '@often'"},
        Bad{"@every", "needs a duration"}, Bad{"@every soon", "not 'soon'"},
        Bad{"@every 0s", "at least 1s"}, Bad{"@every 500ms", "at least 1s"},
        Bad{"@every -5m", "at least 1s"}));

TEST(ScheduleSpecTest, EveryEndsAtTheEndOfTime) {
  absl::StatusOr<ScheduleSpec> every = ScheduleSpec::Parse("@every 1s");
  ASSERT_TRUE(every.ok()) << every.status();
  // The last whole second absl::Time holds: no next one, and no overflow
  // counting the seconds since the epoch.
  const absl::Time last = absl::FromUnixSeconds(INT64_MAX);
  EXPECT_EQ(every->Next(last, absl::UTCTimeZone()), absl::InfiniteFuture());
  EXPECT_EQ(every->Next(last - absl::Seconds(2), absl::UTCTimeZone()),
            last - absl::Seconds(1));
}

TEST(ParseTimeZoneTest, KnowsTheSystemZonesOnly) {
  EXPECT_OK(ParseTimeZone("Europe/Berlin").status());
  EXPECT_OK(ParseTimeZone("UTC").status());
  EXPECT_EQ(ParseTimeZone("Mars/Olympus_Mons").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseTimeZone("").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A zone is looked up by its name, never read from a file a path names: a
// pipe (/dev/stdin, a FIFO) would hang the caller for good.
TEST(ParseTimeZoneTest, TakesNamesNotPaths) {
  EXPECT_OK(ParseTimeZone("America/Argentina/Buenos_Aires").status());
  EXPECT_OK(ParseTimeZone("Etc/GMT+5").status());
  EXPECT_OK(ParseTimeZone("Etc/GMT-14").status());
  for (const char* path :
       {"/dev/stdin", "/proc/self/fd/0", "/usr/share/zoneinfo/UTC",
        "../../../../usr/share/zoneinfo/UTC", "Europe/../UTC",
        "file:/usr/share/zoneinfo/UTC", "./UTC", "UTC/", "Europe//Berlin",
        "Europe/Berlin\n"}) {
    SCOPED_TRACE(path);
    EXPECT_EQ(ParseTimeZone(path).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  // A long name is refused, and not quoted whole.
  absl::Status long_name = ParseTimeZone(std::string(100000, 'A')).status();
  EXPECT_EQ(long_name.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(long_name.message().size(), 200u);
}

TEST(ScheduleSpecTest, ASpecIsAtMostAKilobyte) {
  std::string seconds = "0";
  for (int s = 1; s < 60; ++s) absl::StrAppend(&seconds, ",", s);
  EXPECT_OK(ScheduleSpec::Parse(seconds + " * * * * *").status());
  std::string list = "0";
  while (list.size() <= 1024) absl::StrAppend(&list, ",0");
  EXPECT_EQ(ScheduleSpec::Parse(list + " * * * *").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace internal
}  // namespace delayq
