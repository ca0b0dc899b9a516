// Copyright delayq authors.
//
// The server goes away: calls fail with Unavailable or DeadlineExceeded
// within the timeouts instead of hanging or crashing, work resumes once the
// server is back on the same port, and with appendonly + appendfsync always
// no job whose Add() returned OK is lost to a SIGKILL of the server.

#include <signal.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "delayq/redis_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/redis/redis_test_server.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_job.h"

namespace delayq {
namespace {

using ::delayq::testing::RedisServer;
using ::delayq::testing::StatusIs;

NewJob MakeJob(std::string id, std::string topic) {
  NewJob j =
      testing::PlainJob(std::move(id), std::move(topic), absl::UnixEpoch());
  j.payload = "payload";
  return j;
}

bool IsOutage(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s);
}

RedisOptions OptionsFor(const RedisServer& server) {
  RedisOptions o;
  o.port = server.port();
  o.ns = "outage";
  o.connect_timeout = absl::Milliseconds(300);
  o.command_timeout = absl::Milliseconds(500);
  o.pool_size = 4;
  o.max_clock_skew = absl::InfiniteDuration();  // simulated times
  return o;
}

TEST(RedisOutageTest, KilledUnderLoadFailsFastAndRecoversOnRestart) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start());
  const RedisOptions options = OptionsFor(*server);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend,
                       OpenRedisBackend(options));
  // A call may connect and then wait for a reply; anything beyond both
  // timeouts plus scheduling slack is a hang.
  const absl::Duration bound =
      options.connect_timeout + options.command_timeout + absl::Seconds(2);

  std::atomic<bool> stop{false};
  std::atomic<int> ok_calls{0}, outage_calls{0};
  std::mutex mu;
  std::vector<std::string> problems;  // guarded by mu
  constexpr int kWorkers = 4;
  std::vector<int> outages_of(kWorkers, 0);  // per worker; guarded by mu
  auto worker = [&](int w) {
    for (int i = 0; !stop.load(); ++i) {
      const absl::Time start = absl::Now();
      absl::Status s = backend->Add(
          {MakeJob(absl::StrCat("w", w, "-", i), "t")}, absl::Now());
      if (s.ok()) {
        absl::StatusOr<std::vector<Lease>> l =
            backend->Reserve("t", 1, absl::Now());
        s = l.status();
        if (s.ok() && !l->empty()) {
          s = backend->Ack((*l)[0].job.id, (*l)[0].token, /*result=*/"",
                           absl::Now());
        }
      }
      const absl::Duration took = absl::Now() - start;
      std::lock_guard<std::mutex> lock(mu);
      if (s.ok()) {
        ok_calls++;
      } else if (IsOutage(s)) {
        outage_calls++;
        outages_of[w]++;
      } else {
        problems.push_back(s.ToString());
      }
      if (took > 3 * bound) {
        problems.push_back(
            absl::StrCat("calls took ", absl::FormatDuration(took)));
      }
    }
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) threads.emplace_back(worker, w);
  while (ok_calls.load() < 200) absl::SleepFor(absl::Milliseconds(5));

  server->Kill();
  // A call answered just before the kill may still be counted: the count
  // is taken once every worker has met the outage.
  auto all_met_it = [&] {
    std::lock_guard<std::mutex> lock(mu);
    for (int n : outages_of) {
      if (n == 0) return false;
    }
    return true;
  };
  while (!all_met_it()) absl::SleepFor(absl::Milliseconds(5));
  const int ok_before = ok_calls.load();
  const int outages_before = outage_calls.load();
  while (outage_calls.load() < outages_before + 20) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  // Nothing succeeds while the server is gone.
  EXPECT_EQ(ok_calls.load(), ok_before);

  ASSERT_OK(server->Restart());
  // Work resumes on its own: the pool reconnects and the scripts reload.
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  while (ok_calls.load() < ok_before + 200 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  EXPECT_GE(ok_calls.load(), ok_before + 200) << "work did not resume";
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_TRUE(problems.empty())
      << problems.size() << " problems, first: " << problems.front();
}

TEST(RedisOutageTest, CallsOnADeadServerReturnWithinTheTimeout) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start());
  const RedisOptions options = OptionsFor(*server);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend,
                       OpenRedisBackend(options));
  server->Kill();
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(IsOutage(backend->Add({MakeJob("x", "t")}, absl::Now())));
    EXPECT_TRUE(IsOutage(backend->Reserve("t", 1, absl::Now()).status()));
    EXPECT_TRUE(IsOutage(backend->Get("x").status()));
    EXPECT_TRUE(IsOutage(backend->NextDue().status()));
  }
}

TEST(RedisOutageTest, WritingToAVanishedServerDoesNotRaiseSigpipe) {
  // With the default disposition a stray SIGPIPE would end this process.
  signal(SIGPIPE, SIG_DFL);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start());
  RedisOptions options = OptionsFor(*server);
  options.pool_size = 1;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend,
                       OpenRedisBackend(options));
  ASSERT_OK(backend->Add({MakeJob("warm", "t")}, absl::UnixEpoch()));
  server->Kill();
  // The pooled connection is found closed before it is written to and a new
  // one is refused, so this checks the backend's calls end in Unavailable
  // without a signal; shared_connection_test writes to the dead socket
  // itself (the writes after the peer's reset fail with EPIPE).
  std::vector<NewJob> big;
  for (int i = 0; i < 64; ++i) {
    NewJob j = MakeJob(absl::StrCat("big", i), "t");
    j.payload = std::string(64 * 1024, 'x');
    big.push_back(std::move(j));
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(IsOutage(backend->Add(big, absl::UnixEpoch())));
  }
}

TEST(RedisOutageTest, SigkillLosesNoAcknowledgedAddWithAppendFsyncAlways) {
  const std::vector<std::string> durable = {"--appendonly", "yes",
                                            "--appendfsync", "always"};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start(durable));
  const RedisOptions options = OptionsFor(*server);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend,
                       OpenRedisBackend(options));

  std::atomic<bool> stop{false};
  std::atomic<int> added{0};
  std::mutex mu;
  std::vector<std::string> confirmed;  // guarded by mu
  auto producer = [&](int w) {
    for (int i = 0; !stop.load(); ++i) {
      std::vector<NewJob> batch;
      for (int k = 0; k < 5; ++k) {
        batch.push_back(MakeJob(absl::StrCat("p", w, "-", i, "-", k), "t"));
      }
      absl::Status s = backend->Add(batch, absl::UnixEpoch());
      if (s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        for (const NewJob& j : batch) confirmed.push_back(j.id);
        added += batch.size();
      } else {
        // Only acknowledged adds are promised; stop at the first failure.
        ASSERT_TRUE(IsOutage(s)) << s;
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w) threads.emplace_back(producer, w);
  while (added.load() < 1000) absl::SleepFor(absl::Milliseconds(2));
  server->Kill();  // mid-stream, with adds in flight
  for (std::thread& t : threads) t.join();

  ASSERT_OK(server->Restart(durable));
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_GE(confirmed.size(), 1000u);
  int lost = 0;
  for (const std::string& id : confirmed) {
    absl::StatusOr<Job> job = backend->Get(id);
    if (!job.ok()) {
      ASSERT_TRUE(absl::IsNotFound(job.status())) << job.status();
      ++lost;
    }
  }
  EXPECT_EQ(lost, 0) << "of " << confirmed.size() << " acknowledged jobs";
  ASSERT_OK_AND_ASSIGN(TopicStats stats, backend->Stats("t"));
  EXPECT_GE(stats.ready, static_cast<int64_t>(confirmed.size()));
}

// The clients of `server` other than the one asking.
int OtherClients(const RedisServer& server) {
  const std::vector<std::string> list =
      testing::RawCommand(server.port(), {"CLIENT", "LIST", "TYPE", "normal"});
  if (list.empty()) return -1;
  const std::vector<absl::string_view> lines =
      absl::StrSplit(list[0], '\n', absl::SkipWhitespace());
  return static_cast<int>(lines.size()) - 1;
}

// A primary demoted to a replica (a failover) answers writes with READONLY
// for as long as a connection lives: the connection is dropped, and the next
// call opens another, which reaches whatever the address leads to.
TEST(RedisFailoverTest, ADemotedServerIsLeftForANewConnection) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend,
                       OpenRedisBackend(OptionsFor(*server)));
  ASSERT_OK(backend->Add({MakeJob("before", "t")}, absl::UnixEpoch()));
  ASSERT_EQ(OtherClients(*server), 1);
  // Demoted: a replica of a primary that is not there (port 1).
  ASSERT_EQ(
      testing::RawCommand(server->port(), {"REPLICAOF", "127.0.0.1", "1"})[0],
      "OK");
  absl::Status refused =
      backend->Add({MakeJob("during", "t")}, absl::UnixEpoch());
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(std::string(refused.message()), ::testing::HasSubstr("READONLY"));
  int others = OtherClients(*server);
  for (int i = 0; i < 200 && others != 0; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
    others = OtherClients(*server);
  }
  EXPECT_EQ(others, 0) << "the connection to the replica is still open";
  // Promoted again: the next call works, on a new connection.
  ASSERT_EQ(testing::RawCommand(server->port(), {"REPLICAOF", "NO", "ONE"})[0],
            "OK");
  EXPECT_OK(backend->Add({MakeJob("after", "t")}, absl::UnixEpoch()));
}

// A server that may evict any key when memory runs short would lose jobs
// without a trace: Open() refuses it unless told to accept that.
TEST(RedisEvictionTest, AServerThatEvictsAnyKeyIsRefused) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisServer> server,
                       RedisServer::Start());
  ASSERT_EQ(
      testing::RawCommand(server->port(), {"CONFIG", "SET", "maxmemory-policy",
                                           "allkeys-lru"})[0],
      "OK");
  RedisOptions options = OptionsFor(*server);
  absl::StatusOr<std::unique_ptr<Backend>> refused = OpenRedisBackend(options);
  EXPECT_THAT(refused.status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr("allkeys-lru"));
  options.allow_key_eviction = true;
  EXPECT_OK(OpenRedisBackend(options).status());
  ASSERT_EQ(
      testing::RawCommand(server->port(), {"CONFIG", "SET", "maxmemory-policy",
                                           "volatile-lru"})[0],
      "OK");
  options.allow_key_eviction = false;
  EXPECT_OK(OpenRedisBackend(options).status()) << "delayq sets no TTL";
}

}  // namespace
}  // namespace delayq
