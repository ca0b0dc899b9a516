// Copyright delayq authors.

#include "bench/workloads/idle_memory_probe.h"

#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace delayq {
namespace bench {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

TEST(IdleMemoryProbeTest, ReportsBothTouchesOnceItsIdleTimeIsUp) {
  IdleMemoryProbe probe(absl::Milliseconds(20));
  // Finish() stops a probe whose idle time is not up; this one's is.
  absl::SleepFor(absl::Milliseconds(50));
  const std::string json = probe.Finish();
  EXPECT_THAT(json, MatchesRegex("\\{\"warm_us_per_page\": [0-9.]+, "
                                 "\"after_idle_us_per_page\": [0-9.]+, "
                                 "\"idle_ms\": 20\\}"));
}

TEST(IdleMemoryProbeTest, AProbeStoppedEarlySaysSo) {
  IdleMemoryProbe probe(absl::Hours(1));
  const std::string json = probe.Finish();
  EXPECT_THAT(json, HasSubstr("\"stopped\": true"));
  EXPECT_THAT(json, Not(HasSubstr("after_idle")));
  EXPECT_THAT(json, HasSubstr("\"idle_ms\": 3600000"));
}

}  // namespace
}  // namespace bench
}  // namespace delayq
