// Copyright delayq authors.
//
// OpenBackend(url) picks the backend the URL's scheme names and passes the
// rest to that backend's URL parser.

#include "delayq/open.h"

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "delayq/delayq.h"
#include "gtest/gtest.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

std::string TempDb() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/open-", getpid(), ".db");
}

// A job written through the opened store can be read back, so the URL
// reached a working backend and not just a parser.
void ExpectRoundTrip(Backend& backend) {
  NewJob job;
  job.id = "open-test-1";
  job.topic = "t";
  job.payload = "p";
  job.run_at = absl::FromUnixSeconds(1000);
  ASSERT_OK(backend.Add({job}, absl::FromUnixSeconds(1000)));
  ASSERT_OK_AND_ASSIGN(Job got, backend.Get("open-test-1"));
  EXPECT_EQ(got.payload, "p");
}

TEST(OpenBackendTest, Memory) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend,
                       OpenBackend("memory:"));
  ExpectRoundTrip(*backend);
}

TEST(OpenBackendTest, Sqlite) {
  std::string path = TempDb();
  unlink(path.c_str());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend,
                       OpenBackend(absl::StrCat("sqlite:", path)));
  ExpectRoundTrip(*backend);
  EXPECT_EQ(access(path.c_str(), F_OK), 0);
}

TEST(OpenBackendTest, SqliteBadParameter) {
  EXPECT_THAT(OpenBackend(absl::StrCat("sqlite:", TempDb(), "?nope=1")),
              testing::StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(OpenBackendTest, Redis) {
  ASSERT_OK_AND_ASSIGN(auto server, testing::RedisServer::Start());
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Backend> backend,
      OpenBackend(absl::StrCat("redis://127.0.0.1:", server->port(),
                               "?namespace=open")));
  ExpectRoundTrip(*backend);
}

TEST(OpenBackendTest, RedisBadUrl) {
  EXPECT_THAT(OpenBackend("redis://127.0.0.1"),
              testing::StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(OpenBackendTest, UnknownScheme) {
  EXPECT_THAT(OpenBackend("postgres://x"),
              testing::StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace delayq
