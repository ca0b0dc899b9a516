// Copyright delayq authors.
//
// Bad input gets the documented exit status — 2 for a malformed command
// line (with usage), 1 for a bad value or a failed operation (one line
// "delayq: ...") — and help is there for the program and every command.

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "delayq/version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_runner.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Exit 2 with the problem and the usage on stderr.
void ExpectUsage(const CliResult& r, const std::string& what) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(what));
  EXPECT_THAT(r.err, HasSubstr("Usage: delayq"));
  EXPECT_EQ(r.out, "");
}

TEST(CliErrorsTest, CommandLineMistakesExitTwoWithUsage) {
  CliRunner cli;
  ExpectUsage(cli.Run({}), "Commands:");
  ExpectUsage(cli.Run({"frobnicate"}), "unknown command 'frobnicate'");
  ExpectUsage(cli.Run({"add", "t", "--bogus"}), "unknown flag --bogus");
  ExpectUsage(cli.Run({"stats", "-x"}), "unknown flag -x");
  ExpectUsage(cli.Run({"add"}), "missing TOPIC");
  ExpectUsage(cli.Run({"list"}), "missing TOPIC");
  ExpectUsage(cli.Run({"kick"}), "missing TOPIC");
  ExpectUsage(cli.Run({"work", "--", "true"}), "missing TOPIC");
  ExpectUsage(cli.Run({"get"}), "missing ID");
  ExpectUsage(cli.Run({"add", "t", "--delay"}), "--delay needs a DURATION");
  ExpectUsage(cli.Run({"add", "t", "a", "b"}), "unexpected argument 'b'");
  ExpectUsage(cli.Run({"work", "t"}), "missing -- COMMAND");
  ExpectUsage(cli.Run({"work", "t", "echo"}), "put the command after --");
  ExpectUsage(
      cli.Run({"add", "t", "--delay", "1s", "--at", "2030-01-01T00:00:00Z"}),
      "not both");
  ExpectUsage(cli.Run({"work", "t", "--json", "--", "true"}),
              "unknown flag --json");
}

TEST(CliErrorsTest, ASlipOfTheKeyboardGetsASuggestion) {
  CliRunner cli;
  ExpectUsage(cli.Run({"stast"}),
              "unknown command 'stast' (did you mean 'stats'?)");
  ExpectUsage(cli.Run({"schedul"}),
              "unknown command 'schedul' (did you mean 'schedule'?)");
  ExpectUsage(cli.Run({"add", "t", "--priorty", "2"}),
              "unknown flag --priorty (did you mean '--priority'?)");
  ExpectUsage(cli.Run({"stats", "--jsn"}),
              "unknown flag --jsn (did you mean '--json'?)");
  // Nothing near: no guess.
  CliResult far = cli.Run({"frobnicate"});
  EXPECT_THAT(far.err, Not(HasSubstr("did you mean")));
}

TEST(CliErrorsTest, VersionIsPrinted) {
  CliRunner cli;
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"--version"}, {"version"}}) {
    CliResult r = cli.Run(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, absl::StrCat("delayq ", Version(), "\n"));
  }
}

TEST(CliErrorsTest, BadValuesExitOneWithOneLine) {
  CliRunner cli;
  ExpectFailure(cli.Run({"add", "t", "--delay", "5 minutes"}),
                "bad duration for --delay: '5 minutes'");
  ExpectFailure(cli.Run({"add", "t", "--delay", "-5s"}),
                "--delay must not be negative");
  ExpectFailure(cli.Run({"add", "t", "--ttr", "0s"}), "--ttr must be positive");
  ExpectFailure(cli.Run({"add", "t", "--at", "tomorrow"}),
                "bad time for --at: 'tomorrow'");
  ExpectFailure(cli.Run({"add", "t", "--backoff", "linear:1s"}),
                "bad --backoff: 'linear:1s'");
  ExpectFailure(cli.Run({"add", "t", "--max-attempts", "0"}),
                "bad --max-attempts: '0'");
  ExpectFailure(cli.Run({"add", "bad topic!"}), "topic");
  ExpectFailure(cli.Run({"work", "t", "--timeout", "soon", "--", "true"}),
                "bad duration for --timeout");
  ExpectFailure(cli.Run({"work", "t", "--", "no-such-program-here"}),
                "command not found: no-such-program-here");
  ExpectFailure(cli.Run({"list", "t", "--state", "sleeping"}),
                "bad --state: 'sleeping'");
}

// A payload over the limit is refused after reading one byte past it, not
// after reading all of it (stdin may be endless).
TEST(CliErrorsTest, AnOversizedPayloadOnStdinIsRefusedUnread) {
  CliRunner cli;
  const std::string big(3 << 20, 'x');
  ExpectFailure(cli.Run({"add", "t", "-"}, big),
                "payload is 1048577 bytes; the limit is 1048576");
}

// Ids go into logs, terminals and DELAYQ_JOB_ID: no control bytes.
TEST(CliErrorsTest, AnIdWithAControlByteIsRefused) {
  CliRunner cli;
  ExpectFailure(cli.Run({"add", "t", "x", "--id", "a\nforged line"}),
                "control byte");
  ExpectFailure(cli.Run({"add", "t", "x", "--id", "\x1b[2J"}), "control byte");
}

TEST(CliErrorsTest, BadOrUnreachableStoresExitOne) {
  CliRunner cli;
  ExpectFailure(cli.Run({"--store", "mysql://db/jobs", "stats"}),
                "unknown store URL");
  ExpectFailure(cli.Run({"stats", "--store", "sqlite:x.db?sync=maybe"}),
                "sync");
  ExpectFailure(
      cli.Run({"add", "t", "--store", "sqlite:/nonexistent-dir/sub/jobs.db"}),
      "/nonexistent-dir/sub/jobs.db");
  // Reading commands do not create a store where there is none.
  cli.SetEnv("DELAYQ_STORE", "sqlite:" + cli.dir() + "/missing.db");
  ExpectFailure(cli.Run({"stats"}), "no store at");
  ExpectFailure(cli.Run({"get", "x"}), "no store at");
}

// Whatever shape a Redis URL has, its password shows nowhere, from
// --store or from DELAYQ_STORE. Port 1: nothing listens there.
TEST(CliErrorsTest, NoMessageShowsTheRedisPassword) {
  CliRunner cli;
  for (const char* url :
       {"redis://:S3cret?Pw@127.0.0.1:1", "redis://:S3cret#Pw/x@127.0.0.1:1",
        "redis:S3cretPw@host", "redis:/:S3cretPw@host", "redis//:S3cretPw@host",
        "redis+unix://:S3cretPw", "redis://user:S3cretPw",
        "redis://:S3cretPw@127.0.0.1:1/x", "rediss://:S3cretPw@h"}) {
    SCOPED_TRACE(url);
    CliResult flag = cli.Run({"stats", "--store", url});
    ExpectFailure(flag, "");
    EXPECT_THAT(flag.err, Not(HasSubstr("S3cret")));
    cli.SetEnv("DELAYQ_STORE", url);
    CliResult env = cli.Run({"stats"});
    ExpectFailure(env, "");
    EXPECT_THAT(env.err, Not(HasSubstr("S3cret")));
  }
}

TEST(CliErrorsTest, UnknownIdsExitOne) {
  CliRunner cli;
  ASSERT_EQ(cli.Run({"add", "t", "--id", "known"}).exit_code, 0);
  ExpectFailure(cli.Run({"get", "nope"}), "no job with id 'nope'");
  ExpectFailure(cli.Run({"retry", "nope"}), "no job with id 'nope'");
  ExpectFailure(cli.Run({"add", "t", "--id", "known"}), "known");
  // cancel reports the unknown id and still cancels the known one.
  CliResult cancel = cli.Run({"cancel", "nope", "known"});
  EXPECT_EQ(cancel.exit_code, 1);
  EXPECT_EQ(cancel.err, "delayq: no job with id 'nope'\n");
  EXPECT_EQ(cancel.out, "cancelled known\n");
  EXPECT_EQ(cli.Run({"get", "known"}).exit_code, 1);
}

TEST(CliErrorsTest, HelpForTheProgramAndEveryCommand) {
  CliRunner cli;
  CliResult help = cli.Run({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("Exit status:"));
  EXPECT_THAT(help.out, HasSubstr("2  usage error"));
  EXPECT_EQ(cli.Run({"help"}).out, help.out);
  for (const char* command :
       {"add", "stats", "list", "get", "cancel", "kick", "retry", "work"}) {
    SCOPED_TRACE(command);
    CliResult by_help = cli.Run({"help", command});
    EXPECT_EQ(by_help.exit_code, 0);
    EXPECT_THAT(by_help.out,
                StartsWith(std::string("Usage: delayq ") + command));
    EXPECT_THAT(by_help.out, HasSubstr("--store URL"));
    CliResult by_flag = cli.Run({command, "--help"});
    EXPECT_EQ(by_flag.exit_code, 0);
    EXPECT_EQ(by_flag.out, by_help.out);
  }
  EXPECT_EQ(cli.Run({"help", "frobnicate"}).exit_code, 2);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
