// Copyright delayq authors.
//
// The server's life and its guard: the bearer token, the refusal to listen
// beyond loopback without one, a drain that answers what is in flight, and
// logs that never show a payload or a password.

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/serve/serve_process.h"
#include "tests/testing/files.h"
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

std::string FreshStore() { return "sqlite:" + FreshDbPath("server"); }

bool ExitedWith(int status, int code) {
  return WIFEXITED(status) && WEXITSTATUS(status) == code;
}

// One request as written, over a connection of its own; the reply's head
// (status line and headers) and body, or "" when the server sent nothing.
struct RawReply {
  int status = 0;
  std::string head;
  std::string body;
  bool Has(absl::string_view header) const {
    return absl::StrContains(head, absl::StrCat("\r\n", header, "\r\n"));
  }
};

RawReply Exchange(int port, const std::string& request) {
  RawReply reply;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string text;
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) == 0 &&
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char chunk[4096];
    ssize_t got;
    while ((got = recv(fd, chunk, sizeof(chunk), 0)) > 0) {
      text.append(chunk, static_cast<size_t>(got));
    }
  }
  close(fd);
  const size_t end = text.find("\r\n\r\n");
  if (end == std::string::npos) return reply;
  reply.head = text.substr(0, end + 2);
  reply.body = text.substr(end + 4);
  absl::SimpleAtoi(reply.head.substr(9, 3), &reply.status);
  return reply;
}

// A request with the given extra header lines ("Name: value\r\n" each).
std::string Request(const std::string& method, const std::string& path,
                    const std::string& headers, const std::string& body = "") {
  return absl::StrCat(
      method, " ", path, " HTTP/1.1\r\n", headers,
      method == "GET" ? ""
                      : absl::StrCat("Content-Length: ", body.size(), "\r\n"),
      "Connection: close\r\n\r\n", body);
}

std::string HostOf(int port) {
  return absl::StrCat("Host: 127.0.0.1:", port, "\r\n");
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

// DNS rebinding: a page of attacker.example whose name now resolves to
// 127.0.0.1 sends its requests with its own name in Host.
TEST(ServerTest, AHostThatIsNotTheServersIsRefusedWithoutAToken) {
  auto server = ServeProcess::Start(
      FreshStore(), {"--allow-host", "queue.example.com,Other.Example"});
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  ApiClient api(port);
  ASSERT_EQ(api.Post("/v1/topics/t/jobs", {{"payload", "PAYLOAD"}}).status,
            201);
  for (const std::string host :
       {"attacker.example:7070", "attacker.example",
        "127.0.0.1.attacker.example", "localhost.attacker.example:80",
        "[::2]:7070"}) {
    SCOPED_TRACE(host);
    const RawReply read = Exchange(
        port, Request("GET", "/v1/topics/t/jobs", "Host: " + host + "\r\n"));
    EXPECT_EQ(read.status, 403);
    EXPECT_TRUE(absl::StrContains(read.body, "PERMISSION_DENIED")) << read.body;
    EXPECT_FALSE(absl::StrContains(read.body, "PAYLOAD")) << read.body;
    EXPECT_EQ(
        Exchange(port, Request("GET", "/", "Host: " + host + "\r\n")).status,
        403);
  }
  for (const std::string& host : std::vector<std::string>{
           absl::StrCat("127.0.0.1:", port), absl::StrCat("localhost:", port),
           "LOCALHOST.", "[::1]:7070", "queue.example.com",
           "other.example:443"}) {
    SCOPED_TRACE(host);
    EXPECT_EQ(Exchange(port, Request("GET", "/v1/topics/t/jobs",
                                     "Host: " + host + "\r\n"))
                  .status,
              200);
  }
  EXPECT_TRUE(ExitedWith((*server)->Stop(), 0));
}

// A name the server answers to is not an origin it trusts: a page may be
// served under that name on another port or scheme. Only the origin the
// request is sent to is the server's own.
TEST(ServerTest, AnAllowedNameOnAnotherPortIsAnotherOrigin) {
  auto server =
      ServeProcess::Start(FreshStore(), {"--allow-host", "proxy.example"});
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  for (const std::string origin :
       {"http://proxy.example:9999", "https://proxy.example:1",
        "http://proxy.example"}) {
    SCOPED_TRACE(origin);
    EXPECT_EQ(
        Exchange(port, Request("POST", "/v1/topics/t/pause",
                               HostOf(port) + "Origin: " + origin + "\r\n"))
            .status,
        403);
  }
  // Behind a proxy that passes the browser's Host on.
  EXPECT_EQ(Exchange(port, Request("POST", "/v1/topics/t/pause",
                                   "Host: proxy.example\r\nOrigin: "
                                   "https://proxy.example\r\n"))
                .status,
            200);
  EXPECT_TRUE(ExitedWith((*server)->Stop(), 0));
}

// With a token, a rebound page cannot do anything: any name may be used.
TEST(ServerTest, WithATokenAnyHostIsTaken) {
  auto server = ServeProcess::Start(FreshStore(),
                                    {"--token-file", WriteTokenFile(kToken)});
  ASSERT_TRUE(server.ok()) << server.status();
  const RawReply reply = Exchange(
      (*server)->port(),
      Request("GET", "/v1/topics",
              absl::StrCat("Host: queue.internal:7070\r\nAuthorization: "
                           "Bearer ",
                           kToken, "\r\n")));
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_TRUE(ExitedWith((*server)->Stop(), 0));
}

// What a page of another origin could send through its user's browser
// without asking the server first: a form or text/plain body, or a
// request with no body; each is refused and changes nothing.
TEST(ServerTest, RequestsAWebPageOfAnotherOriginSendsAreRefused) {
  auto server = ServeProcess::Start(FreshStore(), {});
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  const std::string host = HostOf(port);
  const std::string body = R"({"payload":"x"})";
  struct Case {
    std::string name, method, path, headers, body;
    int status;
  };
  const std::string evil = "Origin: http://evil.example\r\n";
  const std::string local_other_port = "Origin: http://127.0.0.1:1\r\n";
  const Case cases[] = {
      {"text/plain from another origin", "POST", "/v1/topics/t/jobs",
       host + evil + "Content-Type: text/plain\r\n", body, 403},
      {"JSON from another origin", "POST", "/v1/topics/t/jobs",
       host + evil + "Content-Type: application/json\r\n", body, 403},
      {"another port of this machine", "POST", "/v1/topics/t/pause",
       host + local_other_port, "", 403},
      {"a sandboxed frame", "POST", "/v1/topics/t/jobs",
       host + "Origin: null\r\nContent-Type: application/json\r\n", body, 403},
      {"a cross-site fetch", "POST", "/v1/topics/t/kick",
       host + "Sec-Fetch-Site: cross-site\r\n", "", 403},
      {"a read from another origin", "GET", "/v1/topics/t/jobs", host + evil,
       "", 403},
      {"a form with no Origin", "POST", "/v1/topics/t/jobs",
       host + "Content-Type: application/x-www-form-urlencoded\r\n",
       "payload=x", 415},
      {"text/plain with no Origin", "POST", "/v1/topics/t/jobs",
       host + "Content-Type: text/plain\r\n", body, 415},
      {"a body with no type", "POST", "/v1/topics/t/jobs", host, body, 415},
      {"text/plain from this origin", "POST", "/v1/topics/t/jobs",
       host + absl::StrCat("Origin: http://127.0.0.1:", port, "\r\n") +
           "Content-Type: text/plain\r\n",
       body, 415},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const RawReply reply =
        Exchange(port, Request(c.method, c.path, c.headers, c.body));
    EXPECT_EQ(reply.status, c.status) << reply.body;
  }
  ApiClient api(port);
  EXPECT_EQ(api.Get("/v1/topics").json["topics"].size(), 0u);
  EXPECT_EQ(api.Get("/v1/topics/t/stats").json["ready"], 0);
  EXPECT_EQ(api.Get("/v1/topics/t/stats").json["paused"], false);

  // The same origin (the dashboard), and clients that are not browsers.
  const std::string same =
      host + absl::StrCat("Origin: http://127.0.0.1:", port, "\r\n") +
      "Sec-Fetch-Site: same-origin\r\n";
  EXPECT_EQ(Exchange(port, Request("POST", "/v1/topics/t/jobs",
                                   same + "Content-Type: application/json; "
                                          "charset=utf-8\r\n",
                                   body))
                .status,
            201);
  EXPECT_EQ(Exchange(port, Request("POST", "/v1/topics/t/pause", host)).status,
            200);
  EXPECT_EQ(Exchange(port, Request("POST", "/v1/topics/t/resume", host)).status,
            200);
  EXPECT_EQ(api.Get("/v1/topics/t/stats").json["ready"], 1);
  EXPECT_TRUE(ExitedWith((*server)->Stop(), 0));
}

TEST(ServerTest, EveryReplyCarriesTheSecurityHeaders) {
  auto server = ServeProcess::Start(FreshStore(), {});
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  const std::string host = HostOf(port);
  for (const std::string& request :
       {Request("GET", "/", host), Request("GET", "/v1/topics", host),
        Request("GET", "/nothing", host), Request("GET", "/metrics", host),
        Request("GET", "/", "Host: evil.example\r\n"),
        std::string("BROKEN\r\n\r\n")}) {
    SCOPED_TRACE(request);
    const RawReply reply = Exchange(port, request);
    EXPECT_NE(reply.status, 0);
    EXPECT_TRUE(reply.Has("X-Content-Type-Options: nosniff")) << reply.head;
    EXPECT_TRUE(reply.Has("X-Frame-Options: DENY")) << reply.head;
    EXPECT_TRUE(reply.Has("Referrer-Policy: no-referrer")) << reply.head;
    EXPECT_TRUE(absl::StrContains(reply.head,
                                  "Content-Security-Policy: default-src "
                                  "'self'; frame-ancestors 'none'"))
        << reply.head;
  }
  EXPECT_TRUE(ExitedWith((*server)->Stop(), 0));
}

// The token file is read no further than a token's line can be.
TEST(ServerTest, AnEndlessTokenFileIsRefused) {
  const std::string log = FreshTempPath("serve-log");
  EXPECT_FALSE(
      ServeProcess::Start(FreshStore(), {"--token-file", "/dev/zero"}, log)
          .ok());
  const std::string text = ReadFile(log);
  EXPECT_TRUE(absl::StrContains(text, "is over 4096 bytes")) << text;
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

// A long poll whose client went away hands the job it got back at once,
// with its attempt: the job has a ttr of an hour, so only that can make it
// ready again within the test.
TEST(ServerTest, ALongPollWhoseClientWentAwayGivesItsJobBack) {
  auto server =
      ServeProcess::Start(FreshStore(), {"--max-wait", "1h", "--poll", "1h"});
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  const std::string reserve =
      Request("POST", "/v1/topics/gone/reserve",
              HostOf(port) + "Content-Type: application/json\r\n",
              R"({"wait_ms": 3600000})");
  ASSERT_EQ(send(fd, reserve.data(), reserve.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(reserve.size()));
  ApiClient api(port);
  while (!absl::StrContains(api.Get("/metrics").body,
                            "delayq_http_reserves_waiting 1")) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  close(fd);  // the client is gone, as if killed
  ASSERT_EQ(api.Post("/v1/topics/gone/jobs",
                     {{"payload", "x"}, {"id", "g"}, {"ttr_ms", 3'600'000}})
                .status,
            201);
  // The waiting reserve takes the job (the server's history tells), then
  // gives it back.
  auto reserved = [&] {
    const HttpReply history = api.Get("/v1/jobs/g/history");
    for (const Json& e : history.json["events"]) {
      if (e["event"] == "reserved") return true;
    }
    return false;
  };
  Json job;
  bool seen = false;
  for (int i = 0; i < 1000; ++i) {  // ten seconds at most
    seen = seen || reserved();
    job = api.Get("/v1/jobs/g").json;
    if (seen && job["state"] == "ready") break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(seen) << "the waiting reserve never took the job";
  EXPECT_EQ(job["state"], "ready") << job.dump();
  EXPECT_EQ(job["attempts"], 0) << job.dump();
  EXPECT_TRUE(ExitedWith((*server)->Stop(), 0));
}

// A store told to keep no events (events=0 on its URL) shows no history;
// the flag that once bounded a history of the server's own is gone.
TEST(ServerTest, AStoreThatKeepsNoEventsShowsNoHistory) {
  auto server = ServeProcess::Start(FreshStore() + "?events=0");
  ASSERT_TRUE(server.ok()) << server.status();
  ApiClient api((*server)->port());
  ASSERT_EQ(
      api.Post("/v1/topics/t/jobs", {{"payload", "x"}, {"id", "j"}}).status,
      201);
  HttpReply history = api.Get("/v1/jobs/j/history");
  ASSERT_EQ(history.status, 200) << history.body;
  EXPECT_EQ(history.json["events"].size(), 0u);
  EXPECT_TRUE(ExitedWith((*server)->Stop(), 0));
  EXPECT_FALSE(ServeProcess::Start(FreshStore(), {"--history", "0"}).ok());
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
  const std::string text = ReadFile(log);
  EXPECT_TRUE(absl::StrContains(text, "serving sqlite:")) << text;
  EXPECT_FALSE(absl::StrContains(text, "XYZZY")) << text;

  // A store that cannot be reached: the message names it without its
  // password.
  const std::string redis_log = FreshTempPath("serve-log");
  EXPECT_FALSE(
      ServeProcess::Start("redis://:hunter2pw@127.0.0.1:1", {}, redis_log)
          .ok());
  const std::string redis_text = ReadFile(redis_log);
  EXPECT_TRUE(absl::StrContains(redis_text, "delayq:")) << redis_text;
  EXPECT_FALSE(absl::StrContains(redis_text, "hunter2pw")) << redis_text;
}

}  // namespace
}  // namespace testing
}  // namespace delayq
