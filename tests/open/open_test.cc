// Copyright delayq authors.
//
// OpenBackend(url): each scheme reaches its backend; anything else is refused
// with InvalidArgument naming the URL (as RedactedUrl() shows it).

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "delayq/delayq.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/redis_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace {

using ::delayq::testing::StatusIs;
using ::testing::HasSubstr;

TEST(OpenBackendTest, MemoryScheme) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend,
                       OpenBackend("memory:"));
  EXPECT_EQ(backend->Name(), "memory");
}

TEST(OpenBackendTest, SqliteSchemeOpensAFileThatKeepsJobs) {
  const std::string path = testing::FreshDbPath("open");
  const std::string url = absl::StrCat("sqlite:", path, "?sync=full");
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend, OpenBackend(url));
    EXPECT_EQ(backend->Name(), "sqlite");
    NewJob job;
    job.id = "a";
    job.topic = "t";
    ASSERT_OK(backend->Add({job}, absl::FromUnixSeconds(100)));
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> again, OpenBackend(url));
  ASSERT_OK_AND_ASSIGN(Job job, again->Get("a"));
  EXPECT_EQ(job.topic, "t");
  unlink(path.c_str());
}

TEST(OpenBackendTest, SqliteUrlErrorsComeFromTheSqliteParser) {
  absl::StatusOr<std::unique_ptr<Backend>> backend =
      OpenBackend("sqlite:x.db?sync=sometimes");
  EXPECT_THAT(backend.status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(backend.status().message(), HasSubstr("sync"));
  EXPECT_THAT(OpenBackend("sqlite:").status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(OpenBackendTest, SqliteInAMissingDirectoryIsAStoreError) {
  EXPECT_THAT(OpenBackend("sqlite:/nonexistent-dir/x/jobs.db").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(OpenBackendTest, UnknownSchemeIsInvalidArgumentNamingTheUrl) {
  for (const char* url :
       {"mysql://db/jobs", "jobs.db", "", "SQLITE:x", "memoryx:"}) {
    SCOPED_TRACE(url);
    absl::StatusOr<std::unique_ptr<Backend>> backend = OpenBackend(url);
    EXPECT_THAT(backend.status(), StatusIs(absl::StatusCode::kInvalidArgument));
    EXPECT_THAT(backend.status().message(),
                HasSubstr(absl::StrCat("\"", RedactedUrl(url), "\"")));
  }
}

TEST(OpenBackendTest, PostgresUrlErrorsComeFromThePostgresParser) {
  for (const char* url : {"postgres://u:Zq9pw@db/jobs?colour=blue",
                          "postgresql://u:Zq9pw@db/jobs?schema=9x"}) {
    absl::Status status = OpenBackend(url).status();
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument)) << url;
    EXPECT_THAT(status.message(), HasSubstr("postgres URL")) << url;
    EXPECT_THAT(std::string(status.message()), ::testing::Not(HasSubstr("Zq9")))
        << url;
  }
}

TEST(OpenBackendTest, RedisSchemeReachesAServer) {
  ASSERT_OK_AND_ASSIGN(auto server, testing::RedisServer::Start());
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Backend> backend,
      OpenBackend(absl::StrCat("redis://127.0.0.1:", server->port(),
                               "?namespace=open&max_skew_ms=off")));
  EXPECT_EQ(backend->Name(), "redis");
  NewJob job;
  job.id = "a";
  job.topic = "t";
  job.payload = "p";
  ASSERT_OK(backend->Add({job}, absl::FromUnixSeconds(100)));
  ASSERT_OK_AND_ASSIGN(Job got, backend->Get("a"));
  EXPECT_EQ(got.payload, "p");

  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Backend> over_socket,
      OpenBackend(absl::StrCat("redis+unix://", server->socket_path(),
                               "?namespace=open&max_skew_ms=off")));
  ASSERT_OK_AND_ASSIGN(got, over_socket->Get("a"));
  EXPECT_EQ(got.payload, "p");
}

TEST(OpenBackendTest, EveryRedisSchemeGoesToTheRedisStore) {
  // Nothing listens on port 1: each URL reaches the Redis store, which
  // cannot connect, instead of being an unknown scheme.
  for (const char* url : {"redis+sentinel://127.0.0.1:1/main?namespace=x",
                          "rediss+sentinel://127.0.0.1:1/main?namespace=x",
                          "rediss://127.0.0.1:1?namespace=x"}) {
    SCOPED_TRACE(url);
    EXPECT_THAT(OpenBackend(url).status(),
                StatusIs(absl::StatusCode::kUnavailable));
  }
}

TEST(OpenBackendTest, RedisUrlErrorsComeFromTheRedisParser) {
  EXPECT_THAT(OpenBackend("redis://127.0.0.1").status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(OpenBackend("redis:127.0.0.1:6379").status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(RedactedUrlTest, HidesEverythingThatCouldBeAPassword) {
  EXPECT_EQ(RedactedUrl("redis://:s3cret@h:6379/2?namespace=q"),
            "redis://***@h:6379/2?namespace=q");
  EXPECT_EQ(RedactedUrl("redis://:pa/ss@h:6379"), "redis://***@h:6379");
  EXPECT_EQ(RedactedUrl("redis://:p@ss:w@h:6379"), "redis://***@h:6379");
  EXPECT_EQ(RedactedUrl("rediss://user:pw@h:6380"), "rediss://***@h:6380");
  EXPECT_EQ(RedactedUrl("redis+sentinel://u:pw@s1:1,s2:2/m?db=1&"
                        "sentinel_password=sp&namespace=q"),
            "redis+sentinel://***@s1:1,s2:2/m?db=1&sentinel_password=***&"
            "namespace=q");
  EXPECT_EQ(RedactedUrl("redis+unix://:pw@/run/redis.sock"),
            "redis+unix://***@/run/redis.sock");
  EXPECT_EQ(RedactedUrl("redis://h:6379?namespace=q"),
            "redis://h:6379?namespace=q");
  EXPECT_EQ(RedactedUrl("sqlite:/var/jobs@2.db"), "sqlite:/var/jobs@2.db");
}

// Whatever is wrong with a URL, the error does not quote its password.
TEST(OpenBackendTest, ErrorsNeverQuoteThePassword) {
  for (const char* url :
       {"redis://:hunter2/x@127.0.0.1:notaport", "rediss://:hunter2@h:1",
        "redis://:hunter2@h:1?colour=blue", "redis://:hun%zzter2@h:1",
        "redis+unix://:hunter2/x@/no/such.sock?db=x",
        "redis://:hunter2@127.0.0.1:1"}) {
    absl::Status status = OpenBackend(url).status();
    EXPECT_FALSE(status.ok()) << url;
    EXPECT_THAT(std::string(status.message()),
                ::testing::Not(HasSubstr("hunter2")))
        << url;
    EXPECT_THAT(std::string(status.message()),
                ::testing::Not(HasSubstr("zzter2")))
        << url;
  }
}

}  // namespace
}  // namespace delayq
