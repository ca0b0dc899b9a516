// Copyright delayq authors.
//
// delayq work: commands that succeed, fail until dead, run past --timeout,
// outlive a killed worker, or are running when the worker is asked to stop.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_runner.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Whether process `pid` has exited (gone, or a zombie no one reaped yet),
// polling up to `limit`.
bool ProcessEnds(pid_t pid, absl::Duration limit) {
  const absl::Time deadline = absl::Now() + limit;
  while (true) {
    const std::string stat =
        CliRunner::ReadFile(absl::StrCat("/proc/", pid, "/stat"));
    // "pid (comm) S ...": the state follows the last ')'.
    const size_t paren = stat.rfind(')');
    if (stat.empty() || paren == std::string::npos ||
        stat.compare(paren + 1, 3, " Z ") == 0) {
      return true;
    }
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

std::string JobError(CliRunner& cli, const std::string& id) {
  return cli.Run({"get", id, "--json"}).out;
}

TEST(CliWorkTest, SucceedingCommandGetsPayloadAndEnvironmentAndAcks) {
  CliRunner cli;
  cli.SetEnv("OUT", cli.dir());
  ASSERT_EQ(cli.Run({"add", "mail", "to alice", "--id", "m1"}).exit_code, 0);
  ASSERT_EQ(cli.Run({"add", "mail", "to bob", "--id", "m2"}).exit_code, 0);
  CliResult work =
      cli.Run({"work", "mail", "--once", "--poll", "50ms", "--", "sh", "-c",
               "cat > \"$OUT/$DELAYQ_JOB_ID.payload\"; "
               "echo \"$DELAYQ_TOPIC $DELAYQ_ATTEMPT $DELAYQ_MAX_ATTEMPTS\" > "
               "\"$OUT/$DELAYQ_JOB_ID.env\""});
  ASSERT_EQ(work.exit_code, 0) << work.err;
  EXPECT_EQ(CliRunner::ReadFile(cli.dir() + "/m1.payload"), "to alice");
  EXPECT_EQ(CliRunner::ReadFile(cli.dir() + "/m2.payload"), "to bob");
  EXPECT_EQ(CliRunner::ReadFile(cli.dir() + "/m1.env"), "mail 1 3\n");
  EXPECT_THAT(work.err, HasSubstr("m1 attempt 1/3 ok in "));
  EXPECT_THAT(work.err, HasSubstr("m2 attempt 1/3 ok in "));
  EXPECT_TRUE(CliRunner::NoJobsIn(cli.Run({"stats", "--json"}).out));
}

// With --result the command's stdout is the job's result, kept with the job
// added with --keep-for; a stdout over the limit fails the job instead.
TEST(CliWorkTest, ResultKeepsTheCommandsStdout) {
  CliRunner cli;
  ASSERT_EQ(cli.Run({"add", "calc", "6*7", "--id", "sum", "--keep-for", "1h"})
                .exit_code,
            0);
  ASSERT_EQ(cli.Run({"add", "calc", "big", "--id", "big", "--keep-for", "1h",
                     "--max-attempts", "1"})
                .exit_code,
            0);
  CliResult work = cli.Run(
      {"work", "calc", "--result", "--once", "--poll", "50ms", "--", "sh", "-c",
       "if [ \"$DELAYQ_JOB_ID\" = big ]; then head -c 70000 /dev/zero; "
       "else printf 'result of '; cat; fi"});
  ASSERT_EQ(work.exit_code, 0) << work.err;
  // The result went to the store, not to the worker's stdout.
  EXPECT_EQ(work.out, "");
  EXPECT_EQ(cli.Run({"get", "sum", "--result"}).out, "result of 6*7");
  EXPECT_THAT(work.err, HasSubstr("big attempt 1/1 failed in "));
  EXPECT_THAT(work.err, HasSubstr("(stdout over 65536 bytes), dead"));
  CliResult big = cli.Run({"get", "big", "--json"});
  EXPECT_THAT(big.out, HasSubstr("\"state\":\"dead\""));
  EXPECT_THAT(big.out, HasSubstr("its stdout is over 65536 bytes"));
}

TEST(CliWorkTest, FailingCommandRetriesThenDiesWithTheTailOfItsStderr) {
  CliRunner cli;
  ASSERT_EQ(cli.Run({"add", "t", "x", "--id", "f", "--max-attempts", "2",
                     "--backoff", "fixed:100ms"})
                .exit_code,
            0);
  // 5000 bytes of noise, then the line that matters.
  CliResult work =
      cli.Run({"work", "t", "--once", "--poll", "50ms", "--", "sh", "-c",
               "head -c 5000 /dev/zero | tr '\\0' 'n' >&2; "
               "echo \"boom on attempt $DELAYQ_ATTEMPT\" >&2; exit 3"});
  ASSERT_EQ(work.exit_code, 0) << work.err;
  EXPECT_THAT(work.err, HasSubstr("f attempt 1/2 failed in "));
  EXPECT_THAT(work.err, HasSubstr("(exit 3), retry in 100ms"));
  EXPECT_THAT(work.err, HasSubstr("f attempt 2/2 failed in "));
  EXPECT_THAT(work.err, HasSubstr("(exit 3), dead"));

  CliResult get = cli.Run({"get", "f", "--json"});
  EXPECT_THAT(get.out, HasSubstr("\"state\":\"dead\""));
  EXPECT_THAT(get.out, HasSubstr("\"attempts\":2"));
  const std::string key = "\"last_error\":\"";
  const size_t start = get.out.find(key) + key.size();
  const std::string error =
      get.out.substr(start, get.out.find('"', start) - start);
  EXPECT_THAT(error, EndsWith("nnnboom on attempt 2"));
  EXPECT_LE(error.size(), 2048u);
  EXPECT_GE(error.size(), 2000u);

  // retry: one dead job back to ready; a second time it is not dead.
  CliResult retry = cli.Run({"retry", "f"});
  EXPECT_EQ(retry.exit_code, 0) << retry.err;
  EXPECT_THAT(cli.Run({"get", "f"}).out, HasSubstr("state:        ready"));
  CliResult again = cli.Run({"retry", "f"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.err, "delayq: job 'f' is ready, not dead\n");
}

TEST(CliWorkTest, TimeoutKillsTheCommandAndFailsTheJob) {
  CliRunner cli;
  cli.SetEnv("OUT", cli.dir());
  ASSERT_EQ(cli.Run({"add", "t", "x", "--id", "slow", "--max-attempts", "1"})
                .exit_code,
            0);
  CliResult work =
      cli.Run({"work", "t", "--once", "--poll", "50ms", "--timeout", "300ms",
               "--", "sh", "-c", "sleep 20; touch \"$OUT/survived\""});
  ASSERT_EQ(work.exit_code, 0) << work.err;
  EXPECT_THAT(work.err, HasSubstr("slow attempt 1/1 failed in "));
  EXPECT_THAT(work.err, HasSubstr("(timed out), dead"));
  EXPECT_THAT(JobError(cli, "slow"),
              HasSubstr("\"last_error\":\"timed out after 300ms\""));
  EXPECT_FALSE(Exists(cli.dir() + "/survived"));
}

TEST(CliWorkTest, TimeoutEscalatesToSigkillForACommandIgnoringSigterm) {
  CliRunner cli;
  ASSERT_EQ(
      cli.Run({"add", "t", "x", "--id", "stubborn", "--max-attempts", "1"})
          .exit_code,
      0);
  CliResult work =
      cli.Run({"work", "t", "--once", "--poll", "50ms", "--timeout", "200ms",
               "--", "sh", "-c", "trap '' TERM; sleep 25"});
  ASSERT_EQ(work.exit_code, 0) << work.err;
  EXPECT_THAT(work.err, HasSubstr("(timed out), dead"));
  EXPECT_THAT(JobError(cli, "stubborn"), HasSubstr("timed out after 200ms"));
}

TEST(CliWorkTest, JobOfAKilledWorkerComesBackAfterItsTtr) {
  CliRunner cli;
  cli.SetEnv("OUT", cli.dir());
  ASSERT_EQ(cli.Run({"add", "t", "x", "--id", "k", "--ttr", "1s"}).exit_code,
            0);
  const std::string started = cli.dir() + "/started";
  CliProcess first = cli.Start({"work", "t", "--poll", "50ms", "--", "sh", "-c",
                                "touch \"$OUT/started\"; exec sleep 30"});
  ASSERT_TRUE(CliRunner::WaitForFile(started));
  ASSERT_EQ(kill(first.pid, SIGKILL), 0);
  CliResult killed = cli.Wait(first);
  EXPECT_EQ(killed.signal, SIGKILL);
  EXPECT_THAT(cli.Run({"get", "k"}).out, HasSubstr("attempts:     1 of 3"));

  CliResult second =
      cli.Run({"work", "t", "--once", "--poll", "50ms", "--", "sh", "-c",
               "echo $DELAYQ_ATTEMPT > \"$OUT/attempt\""});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(CliRunner::ReadFile(cli.dir() + "/attempt"), "2\n");
  EXPECT_THAT(second.err, HasSubstr("k attempt 2/3 ok"));
  EXPECT_TRUE(CliRunner::NoJobsIn(cli.Run({"stats", "--json"}).out));
}

TEST(CliWorkTest, AKilledWorkerTakesItsRunningCommandWithIt) {
  CliRunner cli;
  cli.SetEnv("OUT", cli.dir());
  ASSERT_EQ(cli.Run({"add", "t", "x", "--id", "orphan"}).exit_code, 0);
  const std::string started = cli.dir() + "/started";
  CliProcess worker =
      cli.Start({"work", "t", "--poll", "50ms", "--", "sh", "-c",
                 "echo $$ > \"$OUT/pid\"; touch \"$OUT/started\"; "
                 "exec sleep 30"});
  ASSERT_TRUE(CliRunner::WaitForFile(started));
  pid_t command = 0;
  ASSERT_TRUE(absl::SimpleAtoi(
      absl::StripAsciiWhitespace(CliRunner::ReadFile(cli.dir() + "/pid")),
      &command));
  ASSERT_FALSE(ProcessEnds(command, absl::ZeroDuration()));
  ASSERT_EQ(kill(worker.pid, SIGKILL), 0);
  EXPECT_EQ(cli.Wait(worker).signal, SIGKILL);
  EXPECT_TRUE(ProcessEnds(command, absl::Seconds(10)))
      << "the command outlived its worker";
  kill(command, SIGKILL);  // should the check fail, leave nothing behind
}

// A command gets stdin, stdout and stderr, and no other descriptor of its
// worker (the store's file, its news socket, another command's pipes).
TEST(CliWorkTest, ACommandInheritsNoOtherDescriptor) {
  CliRunner cli;
  cli.SetEnv("OUT", cli.dir());
  ASSERT_EQ(cli.Run({"add", "t", "x"}).exit_code, 0);
  CliResult work = cli.Run({"work", "t", "--once", "--poll", "50ms", "--", "sh",
                            "-c", "exec ls /proc/self/fd > \"$OUT/fds\""});
  ASSERT_EQ(work.exit_code, 0) << work.err;
  // 3 is ls's own handle on the folder it lists.
  EXPECT_EQ(CliRunner::ReadFile(cli.dir() + "/fds"), "0\n1\n2\n3\n");
}

// What the command started in the background dies too: its job, whose
// lease lapses with the worker, runs again elsewhere, and must not also run
// on here.
TEST(CliWorkTest, AKilledWorkerTakesWhatItsCommandStartedWithIt) {
  CliRunner cli;
  cli.SetEnv("OUT", cli.dir());
  ASSERT_EQ(cli.Run({"add", "t", "x", "--id", "orphans"}).exit_code, 0);
  const std::string started = cli.dir() + "/started";
  CliProcess worker = cli.Start(
      {"work", "t", "--poll", "50ms", "--", "sh", "-c",
       "sleep 300 & echo $! > \"$OUT/background\"; touch \"$OUT/started\"; "
       "wait"});
  ASSERT_TRUE(CliRunner::WaitForFile(started));
  pid_t background = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(CliRunner::ReadFile(
                                   cli.dir() + "/background")),
                               &background));
  ASSERT_FALSE(ProcessEnds(background, absl::ZeroDuration()));
  ASSERT_EQ(kill(worker.pid, SIGKILL), 0);
  EXPECT_EQ(cli.Wait(worker).signal, SIGKILL);
  EXPECT_TRUE(ProcessEnds(background, absl::Seconds(10)))
      << "the command's background process outlived its worker";
  kill(background, SIGKILL);  // should the check fail, leave nothing behind
}

TEST(CliWorkTest, SigintWaitsForTheRunningCommandThenExitsZero) {
  CliRunner cli;
  cli.SetEnv("OUT", cli.dir());
  ASSERT_EQ(cli.Run({"add", "t", "x", "--id", "g"}).exit_code, 0);
  CliProcess worker = cli.Start(
      {"work", "t", "--poll", "50ms", "--", "sh", "-c",
       "touch \"$OUT/started\"; sleep 0.5; echo done > \"$OUT/finished\""});
  ASSERT_TRUE(CliRunner::WaitForFile(cli.dir() + "/started"));
  ASSERT_EQ(kill(worker.pid, SIGINT), 0);
  CliResult result = cli.Wait(worker);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("stopping; waiting for running jobs"));
  EXPECT_THAT(result.err, HasSubstr("g attempt 1/3 ok"));
  EXPECT_EQ(CliRunner::ReadFile(cli.dir() + "/finished"), "done\n");
  EXPECT_TRUE(CliRunner::NoJobsIn(cli.Run({"stats", "--json"}).out));
}

TEST(CliWorkTest, ConcurrencyRunsCommandsAtTheSameTime) {
  CliRunner cli;
  const std::string seen = cli.dir() + "/seen";
  ASSERT_EQ(mkdir(seen.c_str(), 0755), 0);
  cli.SetEnv("SEEN", seen);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(cli.Run({"add", "t", "x"}).exit_code, 0);
  }
  // Each command waits (up to 10 s) until all three have started; with
  // fewer than three at once they would time out and fail.
  CliResult work = cli.Run(
      {"work", "t", "-j", "3", "--once", "--poll", "50ms", "--", "sh", "-c",
       "touch \"$SEEN/$DELAYQ_JOB_ID\"; i=0; "
       "while [ $(ls \"$SEEN\" | wc -l) -lt 3 ]; do "
       "i=$((i+1)); [ $i -gt 200 ] && exit 1; sleep 0.05; done"});
  ASSERT_EQ(work.exit_code, 0) << work.err;
  EXPECT_THAT(work.err, HasSubstr("with 3 workers"));
  EXPECT_THAT(work.err, Not(HasSubstr("failed")));
  EXPECT_TRUE(CliRunner::NoJobsIn(cli.Run({"stats", "--json"}).out));
}

}  // namespace
}  // namespace testing
}  // namespace delayq
