// Copyright delayq authors.

#include "bench/workloads/report.h"

#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace delayq {
namespace bench {
namespace {

TEST(DistributionTest, NearestRankPercentiles) {
  std::vector<double> values;
  for (int i = 100; i >= 1; --i) values.push_back(i);
  EXPECT_EQ(Distribution(values),
            R"({"p50": 50, "p99": 99, "max": 100, "count": 100})");
}

TEST(DistributionTest, EmptyIsZero) {
  std::vector<double> values;
  EXPECT_EQ(Distribution(values),
            R"({"p50": 0, "p99": 0, "max": 0, "count": 0})");
}

TEST(TallyTest, CountsDuplicatesMissingAndStrays) {
  Tally tally(4);
  EXPECT_EQ(tally.Deliver(0), 1);
  EXPECT_EQ(tally.Deliver(0), 2);
  EXPECT_EQ(tally.Deliver(0), 3);
  EXPECT_EQ(tally.Deliver(2), 1);
  EXPECT_EQ(tally.Deliver(7), 0);
  EXPECT_EQ(tally.Deliver(-1), 0);
  EXPECT_EQ(tally.delivered(), 4);
  EXPECT_EQ(tally.Duplicates(), 2);
  EXPECT_EQ(tally.Missing(), 2);
  EXPECT_EQ(tally.strays(), 2);
}

TEST(ReportTest, OneJsonLine) {
  Report report("delayq-memory", "w2");
  report.Param("n", int64_t{10});
  report.Param("mode", "single");
  report.Metric("duplicates", int64_t{0});
  report.Metric("rate", 1.5);
  report.MetricJson("lateness_ms", R"({"p50": 1})");
  const std::string json = report.ToJson();
  EXPECT_TRUE(absl::StartsWith(
      json,
      R"({"system": "delayq-memory", "workload": "w2", "params": {"n": 10, "mode": "single"}, )"
      R"("metrics": {"duplicates": 0, "rate": 1.500, "lateness_ms": {"p50": 1}}, "peak_rss_kb": )"))
      << json;
  EXPECT_TRUE(absl::EndsWith(json, "}"));
  EXPECT_EQ(json.find('\n'), std::string::npos);
}

TEST(JsonTest, EscapesStringsAndNonFiniteNumbers) {
  EXPECT_EQ(JsonString("a\"b\\c\n"), R"("a\"b\\c\u000a")");
  EXPECT_EQ(JsonNumber(3), "3");
  EXPECT_EQ(JsonNumber(0.25), "0.250");
  EXPECT_EQ(JsonNumber(1.0 / 0.0), "null");
}

TEST(ParseIndexTest, DecimalPrefix) {
  EXPECT_EQ(ParseIndex("42|xxxx"), 42);
  EXPECT_EQ(ParseIndex("7"), 7);
  EXPECT_EQ(ParseIndex("x|1"), -1);
  EXPECT_EQ(ParseIndex(""), -1);
}

}  // namespace
}  // namespace bench
}  // namespace delayq
