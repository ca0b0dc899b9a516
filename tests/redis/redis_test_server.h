// Copyright delayq authors.
//
// One redis-server shared by every test of a test binary, started on first
// use, and a fresh namespace per store so tests never see each other's keys.

#ifndef DELAYQ_TESTS_REDIS_REDIS_TEST_SERVER_H_
#define DELAYQ_TESTS_REDIS_REDIS_TEST_SERVER_H_

#include <hiredis/hiredis.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "delayq/redis_backend.h"
#include "tests/testing/redis_server.h"

namespace delayq {
namespace testing {

// SharedRedisServer()
//
// The binary's server. A server that cannot start (redis-server missing)
// aborts the binary with the reason: the tests must fail, not skip.
inline RedisServer& SharedRedisServer() {
  static RedisServer* server = [] {
    absl::StatusOr<std::unique_ptr<RedisServer>> s = RedisServer::Start();
    if (!s.ok()) {
      fprintf(stderr, "FATAL: cannot start redis-server: %s\n",
              s.status().ToString().c_str());
      abort();
    }
    return s->release();
  }();
  return *server;
}

// FreshRedisOptions()
//
// Options for the shared server under a namespace no other store uses.
inline RedisOptions FreshRedisOptions() {
  static std::atomic<int> counter{0};
  RedisOptions options;
  options.port = SharedRedisServer().port();
  options.ns = absl::StrCat("t", getpid(), "-", counter.fetch_add(1));
  // The tests' times are simulated, years behind the server's clock.
  options.max_clock_skew = absl::InfiniteDuration();
  return options;
}

// FreshRedisUrl()
//
// FreshRedisOptions() as a URL, for code that opens the store by URL (such
// as tests/testing/worker).
inline std::string FreshRedisUrl() {
  const RedisOptions options = FreshRedisOptions();
  return absl::StrCat("redis://127.0.0.1:", options.port,
                      "?namespace=", options.ns, "&max_skew_ms=off");
}

// RawCommand()
//
// Runs one command on its own connection and returns the reply flattened to
// strings (an array's elements, or the single value). Error replies and
// connection failures come back as "ERR:<message>".
inline std::vector<std::string> RawCommand(int port,
                                           std::vector<std::string> args) {
  timeval tv{2, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
  if (c == nullptr || c->err != 0) {
    std::string err = c != nullptr ? c->errstr : "no context";
    if (c != nullptr) redisFree(c);
    return {"ERR:" + err};
  }
  redisSetTimeout(c, tv);
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(
      redisCommandArgv(c, argv.size(), argv.data(), lens.data()));
  std::vector<std::string> out;
  auto text = [](const redisReply* e) -> std::string {
    if (e->type == REDIS_REPLY_INTEGER) return std::to_string(e->integer);
    if (e->type == REDIS_REPLY_NIL) return "";
    if (e->type == REDIS_REPLY_ERROR)
      return "ERR:" + std::string(e->str, e->len);
    return std::string(e->str, e->len);
  };
  if (r == nullptr) {
    out.push_back(std::string("ERR:") + c->errstr);
  } else if (r->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i < r->elements; ++i) out.push_back(text(r->element[i]));
  } else {
    out.push_back(text(r));
  }
  if (r != nullptr) freeReplyObject(r);
  redisFree(c);
  return out;
}

// ReplicaCaughtUp()
//
// Whether the replica is online and has every write the primary has.
inline bool ReplicaCaughtUp(int primary_port) {
  const std::vector<std::string> info =
      RawCommand(primary_port, {"INFO", "replication"});
  if (info.empty()) return false;
  int64_t master_offset = -1, replica_offset = -2;
  for (absl::string_view line : absl::StrSplit(info[0], "\r\n")) {
    if (absl::ConsumePrefix(&line, "master_repl_offset:")) {
      (void)absl::SimpleAtoi(line, &master_offset);
    } else if (absl::ConsumePrefix(&line, "slave0:")) {
      if (!absl::StrContains(line, "state=online")) return false;
      for (absl::string_view kv : absl::StrSplit(line, ',')) {
        if (absl::ConsumePrefix(&kv, "offset=")) {
          (void)absl::SimpleAtoi(kv, &replica_offset);
        }
      }
    }
  }
  return master_offset == replica_offset;
}

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_REDIS_REDIS_TEST_SERVER_H_
