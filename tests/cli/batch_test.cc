// Copyright delayq authors.
//
// delayq batch open | close | show, and delayq add --batch.

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_runner.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::HasSubstr;

TEST(CliBatchTest, OpenAddCloseAndShow) {
  CliRunner cli;
  CliResult open = cli.Run({"batch", "open", "invoices.sent", "march", "--id",
                            "march", "--ttr", "5m"});
  ASSERT_EQ(open.exit_code, 0) << open.err;
  EXPECT_EQ(open.out, "march\n");
  for (const char* invoice : {"17", "18"}) {
    CliResult add =
        cli.Run({"add", "invoices.send", invoice, "--batch", "march"});
    ASSERT_EQ(add.exit_code, 0) << add.err;
  }
  CliResult show = cli.Run({"batch", "show", "march"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(show.out,
            "batch      march (open)\n"
            "jobs       2: 0 done, 0 dead, 0 cancelled, 2 pending\n"
            "completion march (waiting)\n");

  CliResult cancel = cli.Run({"cancel", "march"});
  CliResult closed = cli.Run({"batch", "close", "march", "--json"});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(closed.exit_code, 1) << "the batch went with its completion job";
  EXPECT_THAT(closed.err, HasSubstr("no batch with id 'march'"));
}

TEST(CliBatchTest, CloseReleasesTheCompletionJobOfAnEmptyBatch) {
  CliRunner cli;
  ASSERT_EQ(cli.Run({"batch", "open", "done", "--id", "b"}).exit_code, 0);
  CliResult closed = cli.Run({"batch", "close", "b", "--json"});
  ASSERT_EQ(closed.exit_code, 0) << closed.err;
  EXPECT_EQ(closed.out,
            "{\"id\":\"b\",\"completion_id\":\"b\",\"closed\":true,"
            "\"total\":0,\"done\":0,\"dead\":0,\"cancelled\":0,\"pending\":0,"
            "\"complete\":true}\n");
  CliResult late = cli.Run({"add", "work", "x", "--batch", "b"});
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_THAT(late.err, HasSubstr("is closed"));
}

TEST(CliBatchTest, RefusesWhatItCannotDo) {
  CliRunner cli;
  EXPECT_EQ(cli.Run({"batch"}).exit_code, 2);
  EXPECT_EQ(cli.Run({"batch", "reopen", "b"}).exit_code, 2);
  EXPECT_EQ(cli.Run({"batch", "close"}).exit_code, 2);
  EXPECT_EQ(cli.Run({"batch", "show", "b", "--delay", "1s"}).exit_code, 2);
  CliResult unknown = cli.Run({"add", "work", "x", "--batch", "nobatch"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("no batch with id 'nobatch'"));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
