// Copyright delayq authors.
//
// delayq add, stats, list, get, cancel and kick on a SQLite store, as text
// and as --json.

#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "delayq/delayq.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_runner.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The cells of `topic`'s row of a stats table after the topic's, empty if
// the topic has no row: from `first` (0: DELAYED, READY, RESERVED, DEAD;
// 5: DONE/MIN, FAILED/MIN, DONE/H, FAILED/H), four of them. KEPT is 4.
std::vector<std::string> StatsCells(const std::string& out,
                                    const std::string& topic, int first) {
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    std::vector<std::string> cells =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (cells.size() == 10 && cells[0] == topic) {
      return std::vector<std::string>(cells.begin() + 1 + first,
                                      cells.begin() + 5 + first);
    }
  }
  return {};
}

// The jobs per state in `topic`'s row.
std::vector<std::string> StatsRow(const std::string& out,
                                  const std::string& topic) {
  return StatsCells(out, topic, 0);
}

// The prefix of a topic's `stats --json` object before the store's counts
// (which depend on the minute the test runs in).
std::string Unminuted(absl::string_view json) {
  return std::string(json.substr(0, json.find(",\"last_minute\"")));
}

TEST(CliInspectTest, AddThenGetListAndStatsAsText) {
  CliRunner cli;
  CliResult add = cli.Run({"add", "emails", "hello world", "--id", "mail-1",
                           "--priority", "2", "--ttr", "45s", "--max-attempts",
                           "4", "--backoff", "fixed:10s"});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  EXPECT_EQ(add.out, "mail-1\n");
  // Flags before the positionals work too; a generated id is printed.
  CliResult second = cli.Run({"add", "--delay", "1h", "emails", "later"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const std::string later_id(absl::StripSuffix(second.out, "\n"));
  EXPECT_FALSE(later_id.empty());

  CliResult get = cli.Run({"get", "mail-1"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr("topic:        emails"));
  EXPECT_THAT(get.out, HasSubstr("state:        ready"));
  EXPECT_THAT(get.out, HasSubstr("priority:     2"));
  EXPECT_THAT(get.out, HasSubstr("attempts:     0 of 4"));
  EXPECT_THAT(get.out, HasSubstr("ttr:          45s"));
  EXPECT_THAT(get.out, HasSubstr("backoff:      fixed:10s"));
  EXPECT_THAT(get.out, HasSubstr("payload:      11 bytes  hello world"));
  EXPECT_THAT(get.out, HasSubstr("Z, "));  // UTC next to local time

  CliResult list = cli.Run({"list", "emails"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, StartsWith("ID "));
  EXPECT_THAT(list.out, HasSubstr("mail-1"));
  EXPECT_THAT(list.out, HasSubstr(later_id));
  CliResult delayed = cli.Run({"list", "emails", "--state", "delayed"});
  EXPECT_THAT(delayed.out, HasSubstr(later_id));
  EXPECT_THAT(delayed.out, Not(HasSubstr("mail-1")));
  CliResult limited = cli.Run({"list", "emails", "--limit", "1"});
  EXPECT_THAT(limited.out, HasSubstr("mail-1"));
  EXPECT_THAT(limited.out, Not(HasSubstr(later_id)));

  CliResult stats = cli.Run({"stats"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_THAT(stats.out, StartsWith("TOPIC"));
  EXPECT_THAT(StatsRow(stats.out, "emails"), ElementsAre("1", "1", "0", "0"));
  // A named topic with no jobs shows zeros.
  CliResult other = cli.Run({"stats", "nothing.here"});
  EXPECT_THAT(StatsRow(other.out, "nothing.here"),
              ElementsAre("0", "0", "0", "0"));
}

TEST(CliInspectTest, JsonOutput) {
  CliResult add;
  CliRunner cli;
  add = cli.Run({"add", "emails", "{\"to\":\"a@b.c\"}", "--id", "j1", "--json",
                 "--at", "2030-01-01T01:00:00+01:00"});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  EXPECT_EQ(add.out, "{\"id\":\"j1\"}\n");

  CliResult stats = cli.Run({"stats", "--json"});
  EXPECT_EQ(
      Unminuted(stats.out),
      "[{\"topic\":\"emails\",\"delayed\":1,\"ready\":0,"
      "\"reserved\":0,\"dead\":0,\"done\":0,\"waiting\":0,\"paused\":false");
  EXPECT_THAT(stats.out, HasSubstr(",\"last_hour\":{\"enqueued\":1,\"done\":0,"
                                   "\"failed\":0,\"dead\":0}}]\n"));
  CliResult empty = cli.Run({"stats", "--json", "none"});
  EXPECT_EQ(
      empty.out,
      "[{\"topic\":\"none\",\"delayed\":0,\"ready\":0,"
      "\"reserved\":0,\"dead\":0,\"done\":0,\"waiting\":0,\"paused\":false,"
      "\"last_minute\":{\"enqueued\":0,\"done\":0,\"failed\":0,"
      "\"dead\":0},\"last_hour\":{\"enqueued\":0,\"done\":0,"
      "\"failed\":0,\"dead\":0}}]\n");

  CliResult get = cli.Run({"--json", "get", "j1"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  // The job as the HTTP API writes it.
  EXPECT_THAT(get.out, StartsWith("{\"state\":\"delayed\",\"id\":\"j1\","
                                  "\"topic\":\"emails\",\"priority\":0,"
                                  "\"attempts\":0,\"max_attempts\":3,"));
  EXPECT_THAT(get.out, HasSubstr("\"run_at\":\"2030-01-01T00:00:00.000Z\""));
  EXPECT_THAT(get.out, HasSubstr("\"deadline\":null"));
  EXPECT_THAT(get.out, HasSubstr("\"payload\":\"{\\\"to\\\":\\\"a@b.c\\\"}\""));

  CliResult list = cli.Run({"list", "emails", "--json"});
  EXPECT_THAT(list.out, StartsWith("[{\"state\":\"delayed\",\"id\":\"j1\""));
  EXPECT_THAT(cli.Run({"list", "none", "--json"}).out, "[]\n");
}

// A list longer than --limit ends with its next page's cursor, which
// --cursor takes back; --json with --cursor gives the page and its cursor.
TEST(CliInspectTest, ListPagesByCursor) {
  CliRunner cli;
  for (const char* id : {"p1", "p2", "p3"}) {
    ASSERT_EQ(cli.Run({"add", "pages", "x", "--id", id}).exit_code, 0);
  }
  CliResult first =
      cli.Run({"list", "pages", "--state", "ready", "--limit", "2"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("p2"));
  EXPECT_THAT(first.out, Not(HasSubstr("p3")));
  const size_t at = first.out.find("next page: --cursor ");
  ASSERT_NE(at, std::string::npos) << first.out;
  const std::string cursor(absl::StripSuffix(
      first.out.substr(at + std::string("next page: --cursor ").size()), "\n"));
  CliResult second = cli.Run({"list", "pages", "--state", "ready", "--limit",
                              "2", "--cursor", cursor});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("p3"));
  EXPECT_THAT(second.out, Not(HasSubstr("p1")));
  EXPECT_THAT(second.out, Not(HasSubstr("next page")));

  CliResult json = cli.Run({"list", "pages", "--state", "ready", "--limit", "1",
                            "--cursor", cursor, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_THAT(json.out,
              StartsWith("{\"jobs\":[{\"state\":\"ready\",\"id\":\"p3\""));
  EXPECT_THAT(json.out, HasSubstr("\"next_cursor\":\"\"}"));

  CliResult bad =
      cli.Run({"list", "pages", "--state", "ready", "--cursor", "nonsense"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("bad cursor"));
  CliResult no_state = cli.Run({"list", "pages", "--cursor", cursor});
  EXPECT_NE(no_state.exit_code, 0);
  EXPECT_THAT(no_state.err, HasSubstr("--cursor needs --state"));
}

// delayq workers shows each live lease with its holder: the name of the
// scheduler that reserved it.
TEST(CliInspectTest, WorkersShowsWhoHoldsEachLease) {
  CliRunner cli;
  ASSERT_EQ(cli.Run({"add", "jobs", "x", "--id", "held"}).exit_code, 0);
  ASSERT_EQ(cli.Run({"add", "jobs", "y", "--id", "waiting"}).exit_code, 0);
  CliResult none = cli.Run({"workers"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_THAT(none.out, HasSubstr("(no live leases)"));

  auto backend = OpenBackend(cli.store());
  ASSERT_TRUE(backend.ok()) << backend.status();
  SchedulerOptions options;
  options.name = "thumbnailer-7";
  auto scheduler = Scheduler::Create(*std::move(backend), options);
  ASSERT_TRUE(scheduler.ok()) << scheduler.status();
  auto lease = (*scheduler)->Reserve("jobs");
  ASSERT_TRUE(lease.ok() && lease->has_value()) << lease.status();

  CliResult workers = cli.Run({"workers"});
  ASSERT_EQ(workers.exit_code, 0) << workers.err;
  EXPECT_THAT(workers.out, StartsWith("HOLDER "));
  EXPECT_THAT(workers.out, HasSubstr("thumbnailer-7"));
  EXPECT_THAT(workers.out, HasSubstr("held"));
  EXPECT_THAT(workers.out, Not(HasSubstr("waiting")));
  CliResult json = cli.Run({"workers", "--json"});
  EXPECT_THAT(json.out, HasSubstr("\"holder\":\"thumbnailer-7\""));
  EXPECT_THAT(json.out, HasSubstr("\"reserved_at\":\""));

  // More leases than --limit: a page, and the cursor of the next.
  ASSERT_EQ(cli.Run({"add", "more", "z", "--id", "held-2"}).exit_code, 0);
  auto second = (*scheduler)->Reserve("more");
  ASSERT_TRUE(second.ok() && second->has_value()) << second.status();
  CliResult first_page = cli.Run({"workers", "--limit", "1"});
  ASSERT_EQ(first_page.exit_code, 0) << first_page.err;
  EXPECT_THAT(first_page.out, HasSubstr("held"));
  EXPECT_THAT(first_page.out, Not(HasSubstr("held-2")));
  const size_t at = first_page.out.find("next page: --cursor ");
  ASSERT_NE(at, std::string::npos) << first_page.out;
  std::string cursor = first_page.out.substr(at + 20);
  cursor = cursor.substr(0, cursor.find('\n'));
  CliResult next_page =
      cli.Run({"workers", "--limit", "1", "--cursor", cursor, "--json"});
  ASSERT_EQ(next_page.exit_code, 0) << next_page.err;
  EXPECT_THAT(next_page.out, HasSubstr("\"id\":\"held-2\""));
  EXPECT_THAT(next_page.out, HasSubstr("\"next_cursor\":\"\""));
  CliResult bad = cli.Run({"workers", "--cursor", "%%"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("bad cursor"));
}

TEST(CliInspectTest, AKeptJobShowsDoneAndWaitReturnsIt) {
  CliRunner cli;
  ASSERT_EQ(cli.Run({"add", "calc", "p", "--id", "kept", "--keep-for", "1h",
                     "--keep-at-most", "5"})
                .exit_code,
            0);
  ASSERT_EQ(cli.Run({"add", "calc", "p", "--id", "unkept"}).exit_code, 0);
  CliResult work = cli.Run(
      {"work", "calc", "--once", "--poll", "50ms", "--", "sh", "-c", "true"});
  ASSERT_EQ(work.exit_code, 0) << work.err;

  CliResult get = cli.Run({"get", "kept"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr("state:        done"));
  EXPECT_THAT(get.out, HasSubstr("done at:"));
  EXPECT_THAT(get.out, HasSubstr("kept for:     1h after it is done (its "
                                 "topic keeps at most 5)"));
  EXPECT_THAT(get.out, HasSubstr("result:       0 bytes"));
  // One kept; the other left at its ack.
  CliResult stats = cli.Run({"stats", "calc"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_EQ(StatsCells(stats.out, "calc", 1)[3], "1") << stats.out;
  EXPECT_THAT(cli.Run({"stats", "calc", "--json"}).out,
              HasSubstr("\"dead\":0,\"done\":1,"));
  CliResult list = cli.Run({"list", "calc", "--state", "done"});
  EXPECT_THAT(list.out, HasSubstr("kept"));
  EXPECT_THAT(list.out, HasSubstr("done "));
  EXPECT_THAT(cli.Run({"list", "calc", "--state", "finished"}).err,
              HasSubstr("(delayed, ready, reserved, dead, done or waiting)"));

  CliResult waited = cli.Run({"wait", "kept", "--json"});
  EXPECT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_THAT(waited.out, StartsWith("{\"state\":\"done\",\"id\":\"kept\""));
  CliResult gone = cli.Run({"wait", "unkept", "--timeout", "1s"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_THAT(gone.err, HasSubstr("gone without being kept"));
  CliResult bad = cli.Run({"add", "calc", "p", "--keep-at-most", "5"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("--keep-at-most needs --keep-for"));
}

TEST(CliInspectTest, AJobAddedAfterAnotherWaitsForIt) {
  CliRunner cli;
  ASSERT_EQ(cli.Run({"add", "calc", "c", "--id", "child"}).exit_code, 0);
  CliResult added = cli.Run({"add", "sum", "p", "--id", "parent", "--after",
                             "child", "--on-dependency-failure", "cancel"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  CliResult get = cli.Run({"get", "parent"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, ::testing::ContainsRegex("state: +waiting"));
  EXPECT_THAT(get.out, ::testing::ContainsRegex("waits for: +child\n"));
  EXPECT_THAT(cli.Run({"--json", "get", "parent"}).out,
              HasSubstr("\"after\":[\"child\"]"));
  EXPECT_THAT(cli.Run({"get", "child"}).out, Not(HasSubstr("waits for:")));
  EXPECT_THAT(cli.Run({"list", "sum", "--state", "waiting"}).out,
              HasSubstr("parent"));
  // The dependency is cancelled, and so, by its policy, is the parent.
  ASSERT_EQ(cli.Run({"cancel", "child"}).exit_code, 0);
  EXPECT_EQ(cli.Run({"get", "parent"}).exit_code, 1);
  CliResult bad = cli.Run(
      {"add", "sum", "p", "--after", "x", "--on-dependency-failure", "maybe"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("fail, cancel or run"));
  CliResult unknown = cli.Run({"add", "sum", "p", "--after", "nobody"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("nobody"));
}

TEST(CliInspectTest, PayloadFromStdinIsBinarySafe) {
  CliRunner cli;
  const std::string payload("line one\nzero\0byte \xff\xfe end", 25);
  CliResult add = cli.Run({"add", "blobs", "-", "--id", "b1"}, payload);
  ASSERT_EQ(add.exit_code, 0) << add.err;
  CliResult raw = cli.Run({"get", "b1", "--payload"});
  EXPECT_EQ(raw.out, payload);
  CliResult json = cli.Run({"get", "b1", "--json"});
  EXPECT_THAT(json.out, HasSubstr("\"payload_base64\":\""));
  CliResult text = cli.Run({"get", "b1"});
  EXPECT_THAT(text.out, HasSubstr("25 bytes  line one\\nzero\\x00byte"));
  // No payload argument: an empty payload, stdin untouched.
  ASSERT_EQ(cli.Run({"add", "blobs", "--id", "b2"}, "ignored").exit_code, 0);
  EXPECT_EQ(cli.Run({"get", "b2", "--payload"}).out, "");
}

TEST(CliInspectTest, DelayedJobBecomesReadyAfterItsDelay) {
  CliRunner cli;
  const absl::Time before = absl::Now();
  ASSERT_EQ(cli.Run({"add", "t", "soon", "--delay", "300ms"}).exit_code, 0);
  ASSERT_EQ(cli.Run({"add", "t", "much later", "--delay", "1h"}).exit_code, 0);
  CliResult first = cli.Run({"stats", "t"});
  if (absl::Now() - before < absl::Milliseconds(300)) {
    // Read before the delay was up: both still wait.
    EXPECT_THAT(StatsRow(first.out, "t"), ElementsAre("2", "0", "0", "0"));
  }
  std::vector<std::string> row;
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  do {
    absl::SleepFor(absl::Milliseconds(50));
    row = StatsRow(cli.Run({"stats", "t"}).out, "t");
  } while (row != std::vector<std::string>{"1", "1", "0", "0"} &&
           absl::Now() < give_up);
  EXPECT_THAT(row, ElementsAre("1", "1", "0", "0"));
  EXPECT_GE(absl::Now() - before, absl::Milliseconds(300));
}

TEST(CliInspectTest, CancelDeletesAndKickRevivesDeadJobs) {
  CliRunner cli;
  ASSERT_EQ(cli.Run({"add", "t", "a", "--id", "a"}).exit_code, 0);
  CliResult cancel = cli.Run({"cancel", "a"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(cancel.out, "cancelled a\n");
  CliResult gone = cli.Run({"get", "a"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_EQ(gone.err, "delayq: no job with id 'a'\n");

  for (const char* id : {"d1", "d2", "d3"}) {
    ASSERT_EQ(
        cli.Run({"add", "t", "x", "--id", id, "--max-attempts", "1"}).exit_code,
        0);
  }
  CliResult work =
      cli.Run({"work", "t", "--once", "--poll", "50ms", "--", "false"});
  ASSERT_EQ(work.exit_code, 0) << work.err;
  const std::string after_work = cli.Run({"stats"}).out;
  EXPECT_THAT(StatsRow(after_work, "t"), ElementsAre("0", "0", "0", "3"));
  // Three attempts failed this hour; none was done.
  EXPECT_THAT(StatsCells(after_work, "t", 5)[2], "0");
  EXPECT_THAT(StatsCells(after_work, "t", 5)[3], "3");
  CliResult kick = cli.Run({"kick", "t", "2"});
  EXPECT_EQ(kick.out, "kicked 2 dead jobs of t back to ready\n");
  EXPECT_THAT(StatsRow(cli.Run({"stats"}).out, "t"),
              ElementsAre("0", "2", "0", "1"));
  EXPECT_EQ(cli.Run({"kick", "t", "--json"}).out, "{\"kicked\":1}\n");
  // A kicked job keeps its last error until it fails again.
  CliResult get = cli.Run({"get", "d1"});
  EXPECT_THAT(get.out, HasSubstr("state:        ready"));
  EXPECT_THAT(get.out, HasSubstr("last error:   exit status 1"));
}

// cancel --flow: the job and what it waits for, parents first, each told.
TEST(CliInspectTest, CancelFlowTakesWhatAJobWaitsForAlong) {
  CliRunner cli;
  ASSERT_EQ(cli.Run({"add", "t", "u", "--id", "upload"}).exit_code, 0);
  ASSERT_EQ(cli.Run({"add", "t", "p", "--id", "publish", "--after", "upload"})
                .exit_code,
            0);
  CliResult cancel = cli.Run({"cancel", "--flow", "publish", "nope"});
  EXPECT_EQ(cancel.exit_code, 1);
  EXPECT_EQ(cancel.out, "cancelled publish\ncancelled upload\n");
  EXPECT_EQ(cli.Run({"get", "upload"}).exit_code, 1);
  ASSERT_EQ(cli.Run({"add", "t", "x", "--id", "x"}).exit_code, 0);
  EXPECT_EQ(cli.Run({"cancel", "--flow", "x", "--json"}).out,
            "{\"cancelled\":[\"x\"],\"failed\":[]}\n");
}

TEST(CliInspectTest, PromoteRunsADelayedJobNowAndPurgeDeletesDeadOnes) {
  CliRunner cli;
  ASSERT_EQ(
      cli.Run({"add", "t", "x", "--id", "later", "--delay", "1h"}).exit_code,
      0);
  CliResult promote = cli.Run({"promote", "later", "nope", "--json"});
  EXPECT_EQ(promote.exit_code, 1);
  // The partial failure is in the JSON as well as on stderr.
  EXPECT_EQ(promote.out,
            "{\"promoted\":[\"later\"],\"failed\":[{\"id\":\"nope\","
            "\"error\":\"no job with id 'nope'\"}]}\n");
  EXPECT_THAT(StatsRow(cli.Run({"stats"}).out, "t"),
              ElementsAre("0", "1", "0", "0"));
  CliResult again = cli.Run({"promote", "later"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("is ready, not delayed"));

  for (const char* id : {"d1", "d2", "d3"}) {
    ASSERT_EQ(
        cli.Run({"add", "u", "x", "--id", id, "--max-attempts", "1"}).exit_code,
        0);
  }
  ASSERT_EQ(cli.Run({"work", "u", "--once", "--poll", "50ms", "--", "false"})
                .exit_code,
            0);
  CliResult no_state = cli.Run({"purge", "u"});
  EXPECT_EQ(no_state.exit_code, 2);
  EXPECT_THAT(no_state.err, HasSubstr("purge needs --state dead"));
  CliResult purge = cli.Run({"purge", "u", "2", "--state", "dead"});
  EXPECT_EQ(purge.out, "purged 2 dead jobs of u\n");
  EXPECT_EQ(cli.Run({"purge", "u", "--state", "dead", "--json"}).out,
            "{\"purged\":1}\n");
  EXPECT_THAT(StatsRow(cli.Run({"stats"}).out, "u"),
              ElementsAre("0", "0", "0", "0"));
}

TEST(CliInspectTest, StatsWatchRefreshesUntilInterrupted) {
  CliRunner cli;
  ASSERT_EQ(cli.Run({"add", "t", "x"}).exit_code, 0);
  CliProcess watch = cli.Start({"stats", "--json", "-w=100ms", "t"});
  // Wait for a few refreshes, one JSON array per line.
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  const auto lines_so_far = [&] {
    const std::string out = CliRunner::ReadFile(watch.out_path);
    return std::count(out.begin(), out.end(), '\n');
  };
  while (lines_so_far() < 3 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_EQ(kill(watch.pid, SIGINT), 0);
  CliResult result = cli.Wait(watch);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::string> lines =
      absl::StrSplit(result.out, '\n', absl::SkipEmpty());
  ASSERT_GE(lines.size(), 3u);
  for (const std::string& line : lines) {
    EXPECT_EQ(
        Unminuted(line),
        "[{\"topic\":\"t\",\"delayed\":0,\"ready\":1,"
        "\"reserved\":0,\"dead\":0,\"done\":0,\"waiting\":0,\"paused\":false");
  }
}

}  // namespace
}  // namespace testing
}  // namespace delayq
