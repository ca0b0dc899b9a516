// Copyright delayq authors.
//
// The delayq program on a Redis store (--store redis://...): adding and
// inspecting jobs, working them off, and the errors for a malformed URL, a
// refused connection and a server that never answers.

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_runner.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/loopback_port.h"
#include "tests/testing/redis_server.h"

namespace delayq {
namespace testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A loopback socket bound to a free port; listening or not.
class Socket {
 public:
  explicit Socket(bool listen_on_it) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    absl::StatusOr<int> port = testing::BindLoopback(fd_);
    if (!port.ok() || (listen_on_it && listen(fd_, 16) != 0)) {
      ADD_FAILURE() << "cannot set up a loopback socket";
    }
    port_ = port.value_or(0);
  }
  ~Socket() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class CliRedisTest : public ::testing::Test {
 protected:
  // A namespace of its own for each test.
  void SetUp() override {
    static std::atomic<int> counter{0};
    store_ = absl::StrCat("redis://127.0.0.1:", SharedRedisServer().port(),
                          "?namespace=cli-", getpid(), "-", counter++);
  }

  // Runs delayq with --store pointing at this test's namespace.
  CliResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--store", store_});
    return cli_.Run(args);
  }

  CliRunner cli_;
  std::string store_;
};

// delayq batch on Redis: the cancel of the last pending job of a closed
// batch releases its completion job.
TEST_F(CliRedisTest, BatchOpenAddCloseAndShow) {
  ASSERT_EQ(Run({"batch", "open", "sent", "march", "--id", "b"}).exit_code, 0);
  for (const char* id : {"i17", "i18"}) {
    CliResult add = Run({"add", "send", id, "--id", id, "--batch", "b"});
    ASSERT_EQ(add.exit_code, 0) << add.err;
  }
  CliResult closed = Run({"batch", "close", "b"});
  ASSERT_EQ(closed.exit_code, 0) << closed.err;
  EXPECT_EQ(closed.out,
            "batch      b (closed)\n"
            "jobs       2: 0 done, 0 dead, 0 cancelled, 2 pending\n"
            "completion b (waiting)\n");
  for (const char* id : {"i17", "i18"}) {
    ASSERT_EQ(Run({"cancel", id}).exit_code, 0);
  }
  CliResult show = Run({"batch", "show", "b"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(show.out,
            "batch      b (closed)\n"
            "jobs       2: 0 done, 0 dead, 2 cancelled, 0 pending\n"
            "completion b (released)\n");
  CliResult late = Run({"add", "send", "x", "--batch", "b"});
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_THAT(late.err, HasSubstr("is closed"));
}

TEST_F(CliRedisTest, AddGetListAndStats) {
  CliResult add =
      Run({"add", "mail", "hello", "--id", "m1", "--priority", "2"});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  EXPECT_EQ(add.out, "m1\n");
  CliResult later = Run({"add", "mail", "later", "--delay", "1h"});
  ASSERT_EQ(later.exit_code, 0) << later.err;
  const std::string later_id(absl::StripSuffix(later.out, "\n"));
  ASSERT_FALSE(later_id.empty());

  CliResult get = Run({"get", "m1"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr("topic:        mail"));
  EXPECT_THAT(get.out, HasSubstr("state:        ready"));
  EXPECT_THAT(get.out, HasSubstr("priority:     2"));
  EXPECT_THAT(get.out, HasSubstr("payload:      5 bytes  hello"));

  CliResult stats = Run({"stats", "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_THAT(stats.out, HasSubstr("\"topic\":\"mail\""));
  EXPECT_THAT(stats.out, HasSubstr("\"delayed\":1"));
  EXPECT_THAT(stats.out, HasSubstr("\"ready\":1"));

  CliResult ready = Run({"list", "mail"});
  ASSERT_EQ(ready.exit_code, 0) << ready.err;
  EXPECT_THAT(ready.out, HasSubstr("m1"));
  EXPECT_THAT(ready.out, HasSubstr(later_id));
  CliResult delayed = Run({"list", "mail", "--state", "delayed"});
  ASSERT_EQ(delayed.exit_code, 0) << delayed.err;
  EXPECT_THAT(delayed.out, HasSubstr(later_id));
  EXPECT_THAT(delayed.out, ::testing::Not(HasSubstr("m1 ")));

  // Another namespace on the same server sees none of it.
  CliResult other =
      cli_.Run({"--store",
                absl::StrCat("redis://127.0.0.1:", SharedRedisServer().port(),
                             "?namespace=other-", getpid()),
                "stats", "--json"});
  EXPECT_EQ(other.out, "[]\n") << other.err;
}

TEST_F(CliRedisTest, WorkRunsTheCommandAndAcks) {
  cli_.SetEnv("OUT", cli_.dir());
  ASSERT_EQ(Run({"add", "mail", "to alice", "--id", "a"}).exit_code, 0);
  ASSERT_EQ(Run({"add", "mail", "to bob", "--id", "b"}).exit_code, 0);
  CliResult work = Run({"work", "mail", "--once", "--poll", "50ms", "--", "sh",
                        "-c", "cat > \"$OUT/$DELAYQ_JOB_ID.payload\""});
  ASSERT_EQ(work.exit_code, 0) << work.err;
  EXPECT_EQ(CliRunner::ReadFile(cli_.dir() + "/a.payload"), "to alice");
  EXPECT_EQ(CliRunner::ReadFile(cli_.dir() + "/b.payload"), "to bob");
  EXPECT_THAT(work.err, HasSubstr("a attempt 1/3 ok in "));
  EXPECT_THAT(work.err, HasSubstr("b attempt 1/3 ok in "));
  // Acked jobs are gone from the store.
  EXPECT_TRUE(CliRunner::NoJobsIn(Run({"stats", "--json"}).out));
  ExpectFailure(Run({"get", "a"}), "no job with id 'a'");
}

// A worker whose server goes away says so on stderr, once per kind of call
// and interval rather than once per retry, and goes on retrying.
TEST_F(CliRedisTest, AWorkerTellsOfAStoreItCannotReach) {
  absl::StatusOr<std::unique_ptr<RedisServer>> own = RedisServer::Start();
  ASSERT_TRUE(own.ok()) << own.status();
  const std::string store =
      absl::StrCat("redis://127.0.0.1:", (*own)->port(), "?namespace=gone");
  cli_.SetEnv("OUT", cli_.dir());
  ASSERT_EQ(
      cli_.Run({"--store", store, "add", "mail", "x", "--id", "a"}).exit_code,
      0);
  CliProcess worker =
      cli_.Start({"--store", store, "work", "mail", "--poll", "50ms", "--",
                  "sh", "-c", "touch \"$OUT/$DELAYQ_JOB_ID.done\""});
  ASSERT_TRUE(CliRunner::WaitForFile(cli_.dir() + "/a.done"));
  (*own)->Kill();
  // A worker waiting for jobs meets the lost server only at its next store
  // call, at the latest while it stops; the rate limit holds the lines down
  // however many calls fail meanwhile.
  absl::SleepFor(absl::Seconds(2));
  kill(worker.pid, SIGTERM);
  CliResult r = cli_.Wait(worker);
  EXPECT_THAT(r.err, HasSubstr("delayq: reserve failed, retrying: "));
  EXPECT_THAT(r.err, HasSubstr("UNAVAILABLE"));
  EXPECT_LE(std::count(r.err.begin(), r.err.end(), '\n'), 12) << r.err;
}

// A command gets no descriptor of its worker: no authenticated connection
// to Redis (the pool's or the news subscription's) in particular.
TEST_F(CliRedisTest, ACommandInheritsNoRedisConnection) {
  cli_.SetEnv("OUT", cli_.dir());
  ASSERT_EQ(Run({"add", "mail", "x"}).exit_code, 0);
  CliResult work = Run({"work", "mail", "--once", "--poll", "50ms", "--", "sh",
                        "-c", "exec ls /proc/self/fd > \"$OUT/fds\""});
  ASSERT_EQ(work.exit_code, 0) << work.err;
  // 3 is ls's own handle on the folder it lists.
  EXPECT_EQ(CliRunner::ReadFile(cli_.dir() + "/fds"), "0\n1\n2\n3\n");
}

// Nothing the program prints shows a password, whatever the URL looks like:
// not the worker's greeting, not a malformed URL, not an unknown scheme.
TEST_F(CliRedisTest, NoOutputShowsThePassword) {
  absl::StatusOr<std::unique_ptr<RedisServer>> locked = RedisServer::Start();
  ASSERT_TRUE(locked.ok()) << locked.status();
  ASSERT_EQ(RawCommand((*locked)->port(),
                       {"CONFIG", "SET", "requirepass", "hun/ter@2"})[0],
            "OK");
  const std::string at = absl::StrCat("127.0.0.1:", (*locked)->port());
  auto expect_hidden = [](const CliResult& r) {
    for (const std::string& out : {r.out, r.err}) {
      EXPECT_THAT(out, Not(HasSubstr("hun"))) << out;
      EXPECT_THAT(out, Not(HasSubstr("ter@2"))) << out;
      EXPECT_THAT(out, Not(HasSubstr("ter%402"))) << out;
    }
  };
  const std::string good = absl::StrCat("redis://:hun%2Fter%402@", at);
  ASSERT_EQ(cli_.Run({"--store", good, "add", "t", "x"}).exit_code, 0);
  CliResult work = cli_.Run(
      {"--store", good, "work", "t", "--once", "--poll", "50ms", "--", "true"});
  EXPECT_EQ(work.exit_code, 0) << work.err;
  EXPECT_THAT(work.err, HasSubstr("from redis://***@" + at));
  expect_hidden(work);
  // A password with '/' and '@' left unencoded still works: the host
  // starts after the last '@'.
  CliResult unencoded =
      cli_.Run({"--store", absl::StrCat("redis://:hun/ter@2@", at), "stats"});
  EXPECT_EQ(unencoded.exit_code, 0) << unencoded.err;
  expect_hidden(unencoded);
  for (const std::string& url :
       {absl::StrCat("redis://:hun/ter@2@", at, "?colour=blue"),
        absl::StrCat("rediss://user:hun/ter@2@", at),
        absl::StrCat("redis+unix://:hun/ter@2@/no/such.sock?db=x"),
        absl::StrCat("redis://:wrong-hunter@", at)}) {
    CliResult r = cli_.Run({"--store", url, "stats"});
    EXPECT_NE(r.exit_code, 0) << url;
    expect_hidden(r);
  }
}

// `delayq serve` logs the store it serves without its password, when the
// URL comes from DELAYQ_STORE and the password holds '?', '#' and '/'.
TEST_F(CliRedisTest, ServeLogsTheStoreWithoutThePassword) {
  absl::StatusOr<std::unique_ptr<RedisServer>> locked = RedisServer::Start();
  ASSERT_TRUE(locked.ok()) << locked.status();
  ASSERT_EQ(RawCommand((*locked)->port(),
                       {"CONFIG", "SET", "requirepass", "S3cret?Pw#x/y"})[0],
            "OK");
  const std::string at = absl::StrCat("127.0.0.1:", (*locked)->port());
  cli_.SetEnv("DELAYQ_STORE", absl::StrCat("redis://:S3cret%3FPw%23x%2Fy@", at,
                                           "?namespace=s"));
  CliProcess serve = cli_.Start({"serve", "--listen", "127.0.0.1:0"});
  const absl::Time give_up = absl::Now() + absl::Seconds(15);
  while (!absl::StrContains(CliRunner::ReadFile(serve.out_path), "listening") &&
         absl::Now() < give_up && kill(serve.pid, 0) == 0) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  kill(serve.pid, SIGTERM);
  CliResult r = cli_.Wait(serve);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("serving redis://***@", at,
                                            "?namespace=s")));
  EXPECT_THAT(r.err + r.out, Not(HasSubstr("S3cret")));
}

// password_file=PATH keeps the password out of the command line; a file
// that cannot be read is an error that quotes none of it.
TEST_F(CliRedisTest, PasswordFromAFile) {
  absl::StatusOr<std::unique_ptr<RedisServer>> locked = RedisServer::Start();
  ASSERT_TRUE(locked.ok()) << locked.status();
  ASSERT_EQ(RawCommand((*locked)->port(),
                       {"CONFIG", "SET", "requirepass", "S3cretPw"})[0],
            "OK");
  const std::string file = cli_.dir() + "/redis-password";
  {
    std::ofstream out(file);
    out << "S3cretPw\nsecond line\n";
  }
  const std::string url = absl::StrCat("redis://127.0.0.1:", (*locked)->port(),
                                       "?password_file=", file);
  CliResult stats = cli_.Run({"--store", url, "stats"});
  EXPECT_EQ(stats.exit_code, 0) << stats.err;
  ExpectFailure(cli_.Run({"--store", url + "-missing", "stats"}),
                "cannot open password_file");
  {
    std::ofstream out(file);
    out << "S3cretWrong\n";
  }
  CliResult wrong = cli_.Run({"--store", url, "stats"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_THAT(wrong.err, Not(HasSubstr("S3cret")));
}

TEST_F(CliRedisTest, BadRedisUrlExitsOneWithOneLine) {
  ExpectFailure(cli_.Run({"--store", "redis://127.0.0.1:notaport", "stats"}),
                "the port is not a number in 1..65535");
  ExpectFailure(cli_.Run({"--store", "redis://127.0.0.1:6379?colour=blue",
                          "add", "t", "x"}),
                "colour");
  ExpectFailure(cli_.Run({"--store", "redis://:6379", "stats"}), "host");
}

TEST_F(CliRedisTest, UnreachableRedisExitsOneWithoutHanging) {
  {
    // Bound but not listening: the connection is refused at once.
    Socket closed(/*listen_on_it=*/false);
    ExpectFailure(
        cli_.Run({"--store", absl::StrCat("redis://127.0.0.1:", closed.port()),
                  "add", "t", "x"}),
        "refused");
  }
  // Listening but never answering: the connection is made and the first
  // command runs into the command timeout. Run() fails the test if delayq
  // is still running after 10 s.
  Socket silent(/*listen_on_it=*/true);
  const std::string url =
      absl::StrCat("redis://127.0.0.1:", silent.port(), "?timeout_ms=300");
  ExpectFailure(cli_.Run({"--store", url, "stats"}, "", absl::Seconds(10)),
                "redis");
  ExpectFailure(
      cli_.Run({"--store", url, "add", "t", "x"}, "", absl::Seconds(10)),
      "redis");
}

}  // namespace
}  // namespace testing
}  // namespace delayq
