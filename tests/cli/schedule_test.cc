// Copyright delayq authors.
//
// delayq schedule add | rm | list, and a worker running what it stored.

#include <signal.h>

#include <string>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_runner.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(CliScheduleTest, AddListAndRemove) {
  CliRunner cli;
  CliResult add =
      cli.Run({"schedule", "add", "nightly", "0 3 * * *", "--topic", "reports",
               "--tz", "Europe/Berlin", "--payload", "{}", "--missed", "once"});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  EXPECT_THAT(add.out, StartsWith("scheduled nightly, next run "));
  ASSERT_EQ(cli.Run({"schedule", "add", "beat", "@every 90s", "--topic",
                     "beats", "--jitter", "5s", "--missed", "all:3"})
                .exit_code,
            0);

  CliResult list = cli.Run({"schedule", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::vector<std::string> lines = absl::StrSplit(list.out, '\n');
  ASSERT_EQ(lines.size(), 4u) << list.out;  // header, two rows, ""
  EXPECT_THAT(lines[0], ContainsRegex("^NAME +SPEC +TZ +TOPIC +MISSED +JITTER "
                                      "+NEXT RUN$"));
  EXPECT_THAT(lines[1], ContainsRegex("^beat +@every 90s +UTC +beats +all:3 "
                                      "+5s +[0-9-]+ [0-9:.]+ .* \\(in "));
  EXPECT_THAT(lines[2],
              ContainsRegex("^nightly +0 3 \\* \\* \\* +Europe/Berlin +reports "
                            "+once +0 +[0-9-]+ [0-9:.]+ .* \\(in "));

  CliResult json = cli.Run({"schedule", "list", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_THAT(json.out,
              StartsWith("[{\"name\":\"beat\",\"spec\":\"@every 90s\","
                         "\"time_zone\":\"UTC\",\"topic\":\"beats\","
                         "\"missed\":\"all:3\",\"jitter_ms\":5000,"
                         "\"next_run\":\""));
  // 03:00 in Berlin is 02:00Z in winter, 01:00Z in summer.
  EXPECT_THAT(json.out,
              ContainsRegex("\\{\"name\":\"nightly\",\"spec\":\"0 3 \\* \\* "
                            "\\*\",\"time_zone\":\"Europe/Berlin\",\"topic\":"
                            "\"reports\",\"missed\":\"once\",\"jitter_ms\":0,"
                            "\"next_run\":\"[0-9-]+T0[12]:00:00.000Z\","
                            "\"payload\":\"\\{\\}\"\\}\\]"));

  CliResult rm = cli.Run({"schedule", "rm", "nightly"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(rm.out, "removed nightly\n");
  EXPECT_THAT(cli.Run({"schedule", "list"}).out, Not(HasSubstr("nightly")));
  ExpectFailure(cli.Run({"schedule", "rm", "nightly"}),
                "no schedule named 'nightly'");
  EXPECT_THAT(cli.Run({"schedule", "list", "--json"}).out,
              ContainsRegex("^\\[\\{\"name\":\"beat\",[^]]*\\}\\]\n$"));
}

TEST(CliScheduleTest, MistakesAreReported) {
  CliRunner cli;
  struct Usage {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Usage& u : std::vector<Usage>{
           {{"schedule"}, "missing add, rm or list"},
           {{"schedule", "frob"}, "unknown action 'frob'"},
           {{"schedule", "add"}, "missing NAME"},
           {{"schedule", "add", "x"}, "missing SPEC"},
           {{"schedule", "add", "x", "@daily"}, "add needs --topic"},
           {{"schedule", "add", "x", "0", "3", "*", "*", "*", "--topic", "t"},
            "unexpected argument '3'"},
           {{"schedule", "rm"}, "missing NAME"},
           {{"schedule", "list", "extra"}, "unexpected argument 'extra'"},
       }) {
    CliResult r = cli.Run(u.args);
    EXPECT_EQ(r.exit_code, 2) << u.says;
    EXPECT_THAT(r.err, HasSubstr(u.says));
    EXPECT_THAT(r.err, HasSubstr("Usage: delayq schedule"));
  }
  ExpectFailure(cli.Run({"schedule", "add", "x", "61 * * * *", "--topic", "t"}),
                "minute field '61'");
  ExpectFailure(
      cli.Run({"schedule", "add", "x", "@every soon", "--topic", "t"}),
      "needs a duration");
  ExpectFailure(cli.Run({"schedule", "add", "x", "@daily", "--topic", "t",
                         "--tz", "Mars/Olympus_Mons"}),
                "unknown time zone 'Mars/Olympus_Mons'");
  ExpectFailure(cli.Run({"schedule", "add", "x", "@daily", "--topic", "t",
                         "--missed", "sometimes"}),
                "bad --missed 'sometimes'");
  ExpectFailure(cli.Run({"schedule", "add", "x y", "@daily", "--topic", "t"}),
                "schedule name 'x y'");
}

// `delayq work` runs a scheduler, so it enqueues the occurrences of the
// schedules in the store and runs their jobs.
TEST(CliScheduleTest, AWorkerRunsTheOccurrences) {
  CliRunner cli;
  cli.SetEnv("OUT", cli.dir());
  ASSERT_EQ(cli.Run({"schedule", "add", "beat", "@every 1s", "--topic", "beats",
                     "--payload", "hi"})
                .exit_code,
            0);
  const std::string ran = cli.dir() + "/ran";
  CliProcess worker =
      cli.Start({"work", "beats", "--", "sh", "-c",
                 "cat > \"$OUT/payload\"; echo \"$DELAYQ_JOB_ID\" > "
                 "\"$OUT/id\"; touch \"$OUT/ran\""});
  ASSERT_TRUE(CliRunner::WaitForFile(ran));
  ASSERT_EQ(kill(worker.pid, SIGTERM), 0);
  EXPECT_EQ(cli.Wait(worker).exit_code, 0);
  EXPECT_EQ(CliRunner::ReadFile(cli.dir() + "/payload"), "hi");
  EXPECT_THAT(CliRunner::ReadFile(cli.dir() + "/id"),
              ContainsRegex("^beat@[0-9-]+T[0-9:]+Z\n$"));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
