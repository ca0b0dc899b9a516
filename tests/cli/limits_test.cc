// Copyright delayq authors.
//
// delayq limit, and add's --expire-in, --discard-expired and --unique-for,
// on a SQLite store.

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_runner.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(CliLimitTest, LimitShowsInStatsUntilCleared) {
  CliRunner cli;
  ASSERT_EQ(cli.Run({"add", "payments", "42"}).exit_code, 0);
  CliResult set =
      cli.Run({"limit", "payments", "--rate", "50/s", "--concurrency", "10"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(set.out, "limited payments: rate 50/1s, concurrency 10\n");
  // A limited topic is shown even while it has no jobs.
  ASSERT_EQ(cli.Run({"limit", "reports", "--rate", "3/10s", "--burst", "2"})
                .exit_code,
            0);

  CliResult stats = cli.Run({"stats"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_THAT(stats.out, HasSubstr("payments (rate 50/1s, concurrency 10)"));
  EXPECT_THAT(stats.out, HasSubstr("reports (rate 3/10s, burst 2)"));
  CliResult json = cli.Run({"stats", "payments", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_THAT(json.out,
              ::testing::StartsWith(
                  "[{\"topic\":\"payments\",\"delayed\":0,\"ready\":1,"
                  "\"reserved\":0,\"dead\":0,\"done\":0,\"waiting\":0,"
                  "\"paused\":false,\"limit\":{"
                  "\"rate\":50,\"period_ms\":1000,\"burst\":1,"
                  "\"concurrency\":10},\"last_minute\":"));

  CliResult clear = cli.Run({"limit", "payments", "reports", "--clear"});
  ASSERT_EQ(clear.exit_code, 0) << clear.err;
  EXPECT_EQ(clear.out, "no limit on payments\nno limit on reports\n");
  stats = cli.Run({"stats"});
  EXPECT_THAT(stats.out, Not(HasSubstr("rate")));
  EXPECT_THAT(stats.out, Not(HasSubstr("reports")));
}

TEST(CliLimitTest, BadLimitsAreRefused) {
  CliRunner cli;
  ASSERT_EQ(cli.Run({"add", "t", "x"}).exit_code, 0);
  EXPECT_EQ(cli.Run({"limit", "t"}).exit_code, 2);  // nothing to set
  EXPECT_EQ(cli.Run({"limit", "t", "--clear", "--rate", "1/s"}).exit_code, 2);
  EXPECT_EQ(cli.Run({"limit", "t", "--burst", "3"}).exit_code, 2);
  EXPECT_EQ(cli.Run({"limit"}).exit_code, 2);
  CliResult zero = cli.Run({"limit", "t", "--rate", "0/s"});
  EXPECT_EQ(zero.exit_code, 1);
  EXPECT_THAT(zero.err, HasSubstr("--rate"));
  EXPECT_EQ(cli.Run({"limit", "t", "--rate", "5/never"}).exit_code, 1);
  EXPECT_EQ(cli.Run({"limit", "t", "--concurrency", "0"}).exit_code, 1);
}

TEST(CliAddTest, ExpiryAndDedupWindowFlags) {
  CliRunner cli;
  CliResult add = cli.Run({"add", "notify", "hi", "--id", "n-1", "--expire-in",
                           "1h", "--discard-expired"});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  CliResult get = cli.Run({"get", "n-1"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr("expires at:"));
  EXPECT_THAT(get.out, HasSubstr("(then deleted)"));
  EXPECT_EQ(cli.Run({"add", "notify", "hi", "--discard-expired"}).exit_code, 1);

  ASSERT_EQ(cli.Run({"add", "payments", "42", "--id", "charge-42",
                     "--unique-for", "1h"})
                .exit_code,
            0);
  get = cli.Run({"get", "charge-42"});
  EXPECT_THAT(get.out, HasSubstr("unique for:   1h after it is done"));
  ASSERT_EQ(cli.Run({"cancel", "charge-42"}).exit_code, 0);
  CliResult again = cli.Run({"add", "payments", "42", "--id", "charge-42"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("dedup window"));
  // Without a window the id is free once the job is gone.
  ASSERT_EQ(cli.Run({"add", "payments", "43", "--id", "charge-43"}).exit_code,
            0);
  ASSERT_EQ(cli.Run({"cancel", "charge-43"}).exit_code, 0);
  EXPECT_EQ(cli.Run({"add", "payments", "43", "--id", "charge-43"}).exit_code,
            0);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
