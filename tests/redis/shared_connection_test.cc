// Copyright delayq authors.
//
// One connection shared by many threads, against a real redis-server: every
// call gets its own replies, in order, however the calls interleave; a
// server that dies or stalls fails every call queued on the connection, and
// none is left waiting.

#include "backends/redis/client/shared_connection.h"

#include <hiredis/hiredis.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "backends/redis/client/connection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace redis_internal {
namespace {

using ::delayq::testing::RedisServer;
using ::delayq::testing::StatusIs;

std::unique_ptr<SharedConnection> Connect(
    const RedisServer& server,
    absl::Duration command_timeout = absl::Seconds(5)) {
  LinkTarget target;
  target.host = "127.0.0.1";
  target.port = server.port();
  target.endpoint = absl::StrCat("127.0.0.1:", server.port());
  absl::StatusOr<std::unique_ptr<Link>> link =
      Link::Dial(target, absl::Seconds(5), /*tls=*/nullptr);
  if (!link.ok()) return nullptr;
  return std::make_unique<SharedConnection>(*std::move(link), command_timeout);
}

std::string Encode(const std::vector<std::vector<std::string>>& commands) {
  std::string out;
  for (const auto& cmd : commands) {
    AppendArrayHeader(cmd.size(), &out);
    for (const std::string& a : cmd) AppendArgument(a, &out);
  }
  return out;
}

std::string ReplyText(const Reply& r) {
  return r->str == nullptr ? "" : std::string(r->str, r->len);
}

TEST(SharedConnectionTest, ManyThreadsEachGetTheirOwnRepliesInOrder) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start());
  std::unique_ptr<SharedConnection> conn = Connect(*server);
  ASSERT_NE(conn, nullptr);
  constexpr int kThreads = 8;
  constexpr int kCalls = 300;
  std::atomic<int> most_in_flight{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        // 1 to 4 commands per call; every 16th carries 40 KB, so replies
        // straddle the reads of whichever thread reads.
        std::vector<std::vector<std::string>> cmds;
        std::vector<std::string> want;
        for (int k = 0; k <= (t + i) % 4; ++k) {
          std::string text = absl::StrCat("t", t, "-c", i, "-k", k);
          if (i % 16 == 0) text += std::string(40 * 1024, 'x');
          cmds.push_back({"ECHO", text});
          want.push_back(text);
        }
        const int now = conn->in_flight();
        int seen = most_in_flight.load();
        while (now > seen && !most_in_flight.compare_exchange_weak(seen, now)) {
        }
        absl::StatusOr<std::vector<Reply>> got =
            conn->Call(Encode(cmds), cmds.size());
        if (!got.ok() || got->size() != want.size()) {
          ++wrong;
          continue;
        }
        for (size_t k = 0; k < want.size(); ++k) {
          if (ReplyText((*got)[k]) != want[k]) ++wrong;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(most_in_flight.load(), 0) << "no call ever met another one";
  EXPECT_TRUE(conn->usable());
  EXPECT_EQ(conn->in_flight(), 0);
}

TEST(SharedConnectionTest, NoCommandsIsNoCall) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start());
  std::unique_ptr<SharedConnection> conn = Connect(*server);
  ASSERT_NE(conn, nullptr);
  ASSERT_OK_AND_ASSIGN(std::vector<Reply> none, conn->Call("", 0));
  EXPECT_TRUE(none.empty());
  ASSERT_OK_AND_ASSIGN(std::vector<Reply> pong,
                       conn->Call(Encode({{"PING"}}), 1));
  EXPECT_EQ(ReplyText(pong[0]), "PONG");
}

// Starts `n` calls of ECHO behind a DEBUG SLEEP of `sleep` on `conn`, so
// all of them are queued when the test acts; returns their statuses.
std::vector<absl::Status> CallsBehindASleep(SharedConnection* conn, int n,
                                            absl::Duration sleep,
                                            const std::function<void()>& act) {
  std::vector<absl::Status> statuses(n + 1);
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    statuses[0] =
        conn->Call(Encode({{"DEBUG", "SLEEP",
                            absl::StrCat(absl::ToDoubleSeconds(sleep))}}),
                   1)
            .status();
  });
  // The sleep is written first, so every ECHO waits behind it.
  while (conn->waiting() < 1) absl::SleepFor(absl::Milliseconds(1));
  for (int i = 1; i <= n; ++i) {
    threads.emplace_back([&, i] {
      statuses[i] = conn->Call(Encode({{"ECHO", "x"}}), 1).status();
    });
  }
  while (conn->waiting() < n + 1) absl::SleepFor(absl::Milliseconds(1));
  act();
  for (std::thread& t : threads) t.join();
  return statuses;
}

TEST(SharedConnectionTest, AServerThatDiesFailsEveryQueuedCall) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start({"--enable-debug-command", "yes"}));
  std::unique_ptr<SharedConnection> conn = Connect(*server);
  ASSERT_NE(conn, nullptr);
  std::vector<absl::Status> statuses = CallsBehindASleep(
      conn.get(), 4, absl::Seconds(30), [&] { server->Kill(); });
  for (const absl::Status& s : statuses) {
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kUnavailable));
  }
  EXPECT_FALSE(conn->usable());
  EXPECT_EQ(conn->in_flight(), 0);
  // A failed connection takes no more calls.
  EXPECT_THAT(conn->Call(Encode({{"PING"}}), 1),
              StatusIs(absl::StatusCode::kUnavailable));
}

TEST(SharedConnectionTest, NoAnswerWithinTheTimeoutFailsEveryQueuedCall) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start({"--enable-debug-command", "yes"}));
  std::unique_ptr<SharedConnection> conn =
      Connect(*server, absl::Milliseconds(200));
  ASSERT_NE(conn, nullptr);
  std::vector<absl::Status> statuses =
      CallsBehindASleep(conn.get(), 3, absl::Seconds(2), [] {});
  for (const absl::Status& s : statuses) {
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kDeadlineExceeded));
  }
  EXPECT_FALSE(conn->usable());
  EXPECT_THAT(conn->Call(Encode({{"PING"}}), 1),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST(SharedConnectionTest, EachCallHasTheWholeTimeoutAndNoMore) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start({"--enable-debug-command", "yes"}));
  std::unique_ptr<SharedConnection> conn =
      Connect(*server, absl::Milliseconds(600));
  ASSERT_NE(conn, nullptr);
  // Two sleeps of 0.4 s queued together: the first is answered within its
  // 0.6 s, the second (0.8 s after it was queued) is not, though no single
  // wait for bytes lasts 0.6 s. Margins of 0.2 s either way, for slow
  // (sanitizer) builds on a busy machine.
  absl::Status first, second;
  std::thread a([&] {
    first = conn->Call(Encode({{"DEBUG", "SLEEP", "0.4"}}), 1).status();
  });
  while (conn->waiting() < 1) absl::SleepFor(absl::Milliseconds(1));
  std::thread b([&] {
    second = conn->Call(Encode({{"DEBUG", "SLEEP", "0.4"}}), 1).status();
  });
  a.join();
  b.join();
  EXPECT_OK(first);
  EXPECT_THAT(second, StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_FALSE(conn->usable());
}

TEST(SharedConnectionTest, WritingToAClosedConnectionRaisesNoSigpipe) {
  // With the default disposition a SIGPIPE would end this process.
  signal(SIGPIPE, SIG_DFL);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start());
  std::unique_ptr<SharedConnection> conn = Connect(*server);
  ASSERT_NE(conn, nullptr);
  server->Kill();
  // Far more than a socket buffer: the writes after the peer's reset fail
  // with EPIPE.
  EXPECT_THAT(conn->Call(Encode({{"ECHO", std::string(8 << 20, 'x')}}), 1),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_FALSE(conn->usable());
}

PoolOptions PoolFor(const RedisServer& server, int size) {
  PoolOptions options;
  options.host = "127.0.0.1";
  options.port = server.port();
  options.connect_timeout = absl::Seconds(1);
  options.command_timeout = absl::Seconds(2);
  options.size = size;
  return options;
}

// A client of its own, named "probe", that sees the server's clients while
// another client is blocked in BLPOP.
class Probe {
 public:
  explicit Probe(const RedisServer& server)
      : c_(redisConnect("127.0.0.1", server.port())) {
    Command("CLIENT SETNAME probe");
  }
  ~Probe() { redisFree(c_); }

  // Waits until some client is blocked in BLPOP.
  void AwaitBlpop() {
    while (Clients().find("cmd=blpop") == std::string::npos) {
      absl::SleepFor(absl::Milliseconds(1));
    }
  }

  // CLIENT LIST less the probe's own line.
  std::string Clients() {
    std::string out;
    for (absl::string_view line :
         absl::StrSplit(Command("CLIENT LIST"), '\n')) {
      if (!line.empty() && !absl::StrContains(line, "name=probe")) {
        absl::StrAppend(&out, line, "\n");
      }
    }
    return out;
  }

 private:
  std::string Command(const char* command) {
    auto* r = static_cast<redisReply*>(redisCommand(c_, command));
    std::string text = r != nullptr && r->str != nullptr
                           ? std::string(r->str, r->len)
                           : std::string();
    if (r != nullptr) freeReplyObject(r);
    return text;
  }

  redisContext* c_;
};

TEST(ConnectionPoolTest, AConnectionTheServerClosedWhileIdleIsNotUsed) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start());
  ConnectionPool pool(PoolFor(*server, 1));
  ASSERT_OK(pool.Pipeline({{"SET", "k", "v"}}).status());
  // The pooled connection dies with the old process, unused; the next call
  // finds it closed and opens a new one instead of failing on it.
  ASSERT_OK(server->Restart());
  ASSERT_OK_AND_ASSIGN(std::vector<Reply> r, pool.Pipeline({{"PING"}}));
  EXPECT_EQ(ReplyText(r[0]), "PONG");
}

TEST(ConnectionPoolTest, AConnectionThatFailedMidCallIsReplaced) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start({"--enable-debug-command", "yes"}));
  PoolOptions options = PoolFor(*server, 1);
  options.command_timeout = absl::Milliseconds(200);
  ConnectionPool pool(options);
  EXPECT_THAT(pool.Pipeline({{"DEBUG", "SLEEP", "0.3"}}).status(),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  ASSERT_OK_AND_ASSIGN(std::vector<Reply> r, pool.Pipeline({{"PING"}}));
  EXPECT_EQ(ReplyText(r[0]), "PONG");
}

TEST(ConnectionPoolTest, SpreadsConcurrentCallsOverItsConnections) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start());
  ConnectionPool pool(PoolFor(*server, 2));
  ASSERT_OK(pool.Pipeline({{"PING"}}).status());
  Probe probe(*server);
  // While one connection is busy with a slow call, another call goes to
  // the other connection: two clients of the pool.
  std::thread slow([&] {
    EXPECT_OK(pool.Pipeline({{"BLPOP", "nothing", "0.3"}}).status());
  });
  probe.AwaitBlpop();
  ASSERT_OK(pool.Pipeline({{"PING"}}).status());
  const std::string clients = probe.Clients();
  EXPECT_EQ(std::count(clients.begin(), clients.end(), '\n'), 2) << clients;
  slow.join();
}

TEST(ConnectionPoolTest, ACallFallsBackToABusyConnectionWhenOpeningFails) {
  // The server takes two clients, the pool's first connection and the
  // probe: opening a second connection is refused with an error reply on
  // accept.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start({"--maxclients", "2"}));
  ConnectionPool pool(PoolFor(*server, 2));
  ASSERT_OK(pool.Pipeline({{"PING"}}).status());
  Probe probe(*server);
  std::thread slow([&] {
    EXPECT_OK(pool.Pipeline({{"BLPOP", "nothing", "0.2"}}).status());
  });
  probe.AwaitBlpop();
  // The only connection is busy, so this call tries to open another; that
  // fails, and it queues behind the BLPOP on the busy one instead.
  ASSERT_OK_AND_ASSIGN(std::vector<Reply> r, pool.Pipeline({{"ECHO", "hi"}}));
  EXPECT_EQ(ReplyText(r[0]), "hi");
  slow.join();
}

TEST(ConnectionPoolTest, OpeningFailsWithTheServersError) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start({"--maxclients", "1"}));
  redisContext* other = redisConnect("127.0.0.1", server->port());
  ASSERT_NE(other, nullptr);
  ASSERT_EQ(other->err, 0);
  ConnectionPool pool(PoolFor(*server, 1));
  EXPECT_THAT(pool.Pipeline({{"PING"}}).status(),
              StatusIs(absl::StatusCode::kUnavailable));
  redisFree(other);
}

}  // namespace
}  // namespace redis_internal
}  // namespace delayq
