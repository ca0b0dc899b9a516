// Copyright delayq authors.

#include "bench/workloads/idle_memory_probe.h"

#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace delayq {
namespace bench {
namespace {

using ::testing::MatchesRegex;

TEST(IdleMemoryProbeTest, FinishWaitsOutTheIdleTimeAndReportsBothTouches) {
  const absl::Time start = absl::Now();
  IdleMemoryProbe probe(absl::Milliseconds(20));
  const std::string json = probe.Finish();
  // A lower bound only: the second touch comes after the idle time.
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(20));
  EXPECT_THAT(json, MatchesRegex("\\{\"warm_us_per_page\": [0-9.]+, "
                                 "\"after_idle_us_per_page\": [0-9.]+, "
                                 "\"idle_ms\": 20\\}"));
}

TEST(IdleMemoryProbeTest, AProbeLeftUnfinishedDoesNotWaitOutItsIdleTime) {
  // Were the destructor to wait for the hour, the test would time out.
  IdleMemoryProbe probe(absl::Hours(1));
}

}  // namespace
}  // namespace bench
}  // namespace delayq
