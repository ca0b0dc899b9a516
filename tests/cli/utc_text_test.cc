// Copyright delayq authors.
//
// UtcText() formats by hand; it must agree with absl::FormatTime() on every
// time from year 1000 on, across leap years, centuries, the epoch and
// before it.

#include <cstdint>

#include "absl/random/random.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tools/common/values.h"

namespace delayq {
namespace cli {
namespace {

std::string Reference(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

TEST(UtcTextTest, AgreesWithFormatTimeOnChosenTimes) {
  for (const char* text :
       {"1970-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z",
        "2000-02-29T12:34:56.789Z", "1900-03-01T00:00:00Z",
        "2100-02-28T23:59:59.001Z", "2024-12-31T23:59:59.999Z",
        "1000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z",
        "1600-02-29T01:02:03.004Z"}) {
    absl::Time t;
    std::string err;
    ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full, text, &t, &err)) << text;
    EXPECT_EQ(UtcText(t), Reference(t)) << text;
  }
  // Four digits of year always, as RFC 3339 has it (FormatTime drops the
  // leading zeros).
  absl::Time year_zero;
  std::string err;
  ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full, "0000-03-01T00:00:00Z",
                              &year_zero, &err));
  EXPECT_EQ(UtcText(year_zero), "0000-03-01T00:00:00.000Z");
  // The days before it, which the hand-written path does not take.
  ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full, "0000-02-29T23:59:59.999Z",
                              &year_zero, &err));
  EXPECT_EQ(UtcText(year_zero), "0000-02-29T23:59:59.999Z");
  EXPECT_EQ(UtcText(absl::InfiniteFuture()), Reference(absl::InfiniteFuture()));
  EXPECT_EQ(UtcText(absl::InfinitePast()), Reference(absl::InfinitePast()));
}

TEST(UtcTextTest, AgreesWithFormatTimeOnRandomTimes) {
  absl::BitGen gen;
  for (int i = 0; i < 200'000; ++i) {
    // Microseconds from year 1000 to 9999, so truncation to ms is
    // exercised, before the epoch too.
    const int64_t us = absl::Uniform<int64_t>(gen, -30'610'224'000'000'000,
                                              253'402'300'799'999'999);
    const absl::Time t = absl::FromUnixMicros(us);
    ASSERT_EQ(UtcText(t), Reference(t)) << us;
  }
}

// Each thread keeps the last date it wrote: times in a row on one day, and
// across midnights either way, before and after the epoch.
TEST(UtcTextTest, AgreesWithFormatTimeDayAfterDayAndBack) {
  for (const int64_t start_s : {int64_t{-3 * 86'400}, int64_t{1'764'000'000}}) {
    absl::Time t = absl::FromUnixSeconds(start_s);
    for (int i = 0; i < 2'000; ++i) {
      t += absl::Milliseconds(433'517);  // 7 min 13.517 s
      ASSERT_EQ(UtcText(t), Reference(t)) << t;
    }
    for (int i = 0; i < 2'000; ++i) {
      t -= absl::Milliseconds(433'517);
      ASSERT_EQ(UtcText(t), Reference(t)) << t;
      ASSERT_EQ(UtcText(t + absl::Hours(24)), Reference(t + absl::Hours(24)));
    }
  }
}

}  // namespace
}  // namespace cli
}  // namespace delayq
