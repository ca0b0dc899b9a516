// Copyright delayq authors.
//
// One redis-server shared by every test of a test binary, started on first
// use, and a fresh namespace per store so tests never see each other's keys.

#ifndef DELAYQ_TESTS_REDIS_REDIS_TEST_SERVER_H_
#define DELAYQ_TESTS_REDIS_REDIS_TEST_SERVER_H_

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
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
  return options;
}

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_REDIS_REDIS_TEST_SERVER_H_
