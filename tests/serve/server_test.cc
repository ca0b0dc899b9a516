// Copyright delayq authors.
//
// The server's life and its guard: the bearer token, the refusal to listen
// beyond loopback without one, a drain that answers what is in flight, and
// logs that never show a payload or a password.

#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/serve/serve_process.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace testing {
namespace {

constexpr char kToken[] = "s3cret-token-for-tests-0123456789";

std::string WriteTokenFile(const std::string& token) {
  const std::string path = FreshTempPath("token");
  std::ofstream(path) << token << "\n";
  return path;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string FreshStore() { return "sqlite:" + FreshDbPath("server"); }

bool ExitedWith(int status, int code) {
  return WIFEXITED(status) && WEXITSTATUS(status) == code;
}

TEST(ServerTest, ATokenIsCheckedOnEveryApiRequest) {
  auto server = ServeProcess::Start(FreshStore(),
                                    {"--token-file", WriteTokenFile(kToken)});
  ASSERT_TRUE(server.ok()) << server.status();
  ApiClient none((*server)->port());
  HttpReply missing = none.Get("/v1/topics");
  EXPECT_EQ(missing.status, 401);
  EXPECT_EQ(missing.code(), "UNAUTHENTICATED");
  EXPECT_EQ(none.Post("/v1/topics/t/jobs", {{"payload", "x"}}).status, 401);
  EXPECT_EQ(none.Get("/metrics").status, 401);

  ApiClient wrong((*server)->port(), "s3cret-token-for-tests-0123456788");
  HttpReply bad = wrong.Get("/v1/topics");
  EXPECT_EQ(bad.status, 401);
  EXPECT_EQ(bad.code(), "UNAUTHENTICATED");

  ApiClient right((*server)->port(), kToken);
  EXPECT_EQ(right.Post("/v1/topics/t/jobs", {{"payload", "x"}}).status, 201);
  EXPECT_EQ(right.Get("/v1/topics").json["topics"].size(), 1u);
  EXPECT_TRUE(ExitedWith((*server)->Stop(), 0));
}

TEST(ServerTest, BeyondLoopbackOnlyWithAToken) {
  auto refused = ServeProcess::Start(FreshStore(), {"--listen", "0.0.0.0:0"});
  EXPECT_FALSE(refused.ok());

  auto server = ServeProcess::Start(
      FreshStore(),
      {"--listen", "0.0.0.0:0", "--token-file", WriteTokenFile(kToken)});
  ASSERT_TRUE(server.ok()) << server.status();
  ApiClient right((*server)->port(), kToken);
  EXPECT_EQ(right.Get("/v1/topics").status, 200);
  EXPECT_EQ(ApiClient((*server)->port()).Get("/v1/topics").status, 401);
  EXPECT_TRUE(ExitedWith((*server)->Stop(), 0));
}

TEST(ServerTest, AShortTokenIsRefused) {
  EXPECT_FALSE(
      ServeProcess::Start(FreshStore(), {"--token-file", WriteTokenFile("abc")})
          .ok());
}

// The reserve asks to wait an hour and may, and the server looks at the
// store unasked only hourly: only the drain can end the wait.
TEST(ServerTest, DrainAnswersTheRequestsInFlight) {
  auto server =
      ServeProcess::Start(FreshStore(), {"--max-wait", "1h", "--poll", "1h"});
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  HttpReply waited;
  std::thread poller([&] {
    waited =
        ApiClient(port).Post("/v1/topics/t/reserve", {{"wait_ms", 3'600'000}});
  });
  ApiClient api(port);
  // Until the reserve waits in the server.
  bool alive = true;
  for (;;) {
    const HttpReply metrics = api.Get("/metrics");
    alive = metrics.status == 200;
    if (!alive ||
        absl::StrContains(metrics.body, "delayq_http_reserves_waiting 1")) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(alive) << "the server is gone";
  const int status = (*server)->Stop();
  poller.join();
  EXPECT_TRUE(ExitedWith(status, 0)) << status;
  EXPECT_EQ(waited.status, 200) << waited.body;
  EXPECT_EQ(waited.json["leases"].size(), 0u);
}

TEST(ServerTest, HistoryZeroKeepsNoEvents) {
  auto server = ServeProcess::Start(FreshStore(), {"--history", "0"});
  ASSERT_TRUE(server.ok()) << server.status();
  ApiClient api((*server)->port());
  ASSERT_EQ(
      api.Post("/v1/topics/t/jobs", {{"payload", "x"}, {"id", "j"}}).status,
      201);
  HttpReply history = api.Get("/v1/jobs/j/history");
  ASSERT_EQ(history.status, 200) << history.body;
  EXPECT_EQ(history.json["events"].size(), 0u);
  EXPECT_TRUE(ExitedWith((*server)->Stop(), 0));
  EXPECT_FALSE(ServeProcess::Start(FreshStore(), {"--history", "-1"}).ok());
  EXPECT_FALSE(
      ServeProcess::Start(FreshStore(), {"--history", "1000001"}).ok());
}

TEST(ServerTest, LogsShowNeitherPayloadsNorPasswords) {
  const std::string log = FreshTempPath("serve-log");
  const std::string db = FreshDbPath("server");
  {
    auto server = ServeProcess::Start("sqlite:" + db, {}, log);
    ASSERT_TRUE(server.ok()) << server.status();
    ApiClient api((*server)->port());
    EXPECT_EQ(
        api.Post("/v1/topics/t/jobs", {{"payload", "PAYLOAD-XYZZY"}}).status,
        201);
    EXPECT_EQ(
        api.PostRaw("/v1/topics/t/jobs", "{\"payload\": PAYLOAD-XYZZY").status,
        400);
    EXPECT_TRUE(ExitedWith((*server)->Stop(), 0));
  }
  const std::string text = ReadAll(log);
  EXPECT_TRUE(absl::StrContains(text, "serving sqlite:")) << text;
  EXPECT_FALSE(absl::StrContains(text, "XYZZY")) << text;

  // A store that cannot be reached: the message names it without its
  // password.
  const std::string redis_log = FreshTempPath("serve-log");
  EXPECT_FALSE(
      ServeProcess::Start("redis://:hunter2pw@127.0.0.1:1", {}, redis_log)
          .ok());
  const std::string redis_text = ReadAll(redis_log);
  EXPECT_TRUE(absl::StrContains(redis_text, "delayq:")) << redis_text;
  EXPECT_FALSE(absl::StrContains(redis_text, "hunter2pw")) << redis_text;
}

}  // namespace
}  // namespace testing
}  // namespace delayq
