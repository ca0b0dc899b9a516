// Copyright delayq authors.
//
// The transport under `delayq serve` (tools/serve/http/http_server.h), spoken
// to over raw loopback sockets: how requests may arrive (split, pipelined,
// chunked, after "100 Continue"), what it refuses and how, when it closes
// a connection, and what a drain does to idle and busy ones.

#include "tools/serve/http/http_server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tools/serve/api/json_codec.h"

namespace delayq {
namespace serve {
namespace {

// Answers with what it was asked, as JSON.
void Echo(const HttpRequest& request, HttpResponse& response) {
  Json query = Json::array();
  for (const auto& [key, value] : request.query) query.push_back({key, value});
  response.body = Json{
      {"method", request.method},
      {"path", request.path},
      {"query", query},
      {"authorization", request.authorization},
      {"body",
       request.body}}.dump();
}

std::unique_ptr<HttpServer> StartServer(
    HttpServer::Handler handler = Echo,
    HttpServer::Options options = HttpServer::Options()) {
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start({"127.0.0.1", 0}, options, std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status();
  return *std::move(server);
}

struct RawReply {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;
};

// A client socket that writes bytes as given and reads replies.
class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{10, 0};  // a test that waits this long has failed
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  }
  ~RawConnection() { close(fd_); }

  void Send(const std::string& bytes) {
    ASSERT_EQ(send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }

  // Sends what the server takes of `bytes` until it stops reading; false
  // when it stopped before all were sent.
  bool SendWhatGoes(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n =
          send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads up to `chunk` bytes every `pause` until the connection ends or
  // 20 s pass; the bytes received.
  size_t ReadSlowly(size_t chunk, absl::Duration pause) {
    std::string into(chunk, '\0');
    size_t received = 0;
    const absl::Time end = absl::Now() + absl::Seconds(20);
    while (absl::Now() < end) {
      const ssize_t got = recv(fd_, into.data(), chunk, 0);
      if (got <= 0) break;
      received += static_cast<size_t>(got);
      absl::SleepFor(pause);
    }
    return received;
  }

  // The next reply; status 0 when the connection ended first.
  RawReply Read(bool head_only = false) {
    RawReply reply;
    size_t end;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Receive()) return reply;
    }
    reply.head = buffer_.substr(0, end + 2);
    buffer_.erase(0, end + 4);
    absl::SimpleAtoi(reply.head.substr(9, 3), &reply.status);
    size_t length = 0;
    const size_t at = reply.head.find("Content-Length: ");
    if (at != std::string::npos && !head_only) {
      absl::SimpleAtoi(
          reply.head.substr(at + 16, reply.head.find("\r\n", at) - at - 16),
          &length);
    }
    while (buffer_.size() < length) {
      if (!Receive()) return RawReply{};
    }
    reply.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return reply;
  }

  // True when the server closed the connection (or reset it) and sent
  // nothing more; false, with the reason, when it did not within 10 s.
  bool Closed() {
    if (!buffer_.empty()) {
      ADD_FAILURE() << "more bytes: " << buffer_;
      return false;
    }
    char byte;
    const ssize_t got = recv(fd_, &byte, 1, 0);
    if (got == 0 || (got < 0 && errno == ECONNRESET)) return true;
    ADD_FAILURE() << (got > 0 ? "more bytes" : "not closed within 10 s");
    return false;
  }

 private:
  bool Receive() {
    char chunk[4096];
    const ssize_t got = recv(fd_, chunk, sizeof(chunk), 0);
    if (got <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(got));
    return true;
  }

  int fd_ = -1;
  std::string buffer_;
};

bool CanConnect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected =
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) == 0;
  close(fd);
  return connected;
}

Json BodyOf(const RawReply& reply) { return Json::parse(reply.body); }

std::string Post(const std::string& path, const std::string& body,
                 const std::string& more_headers = "") {
  return absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: x\r\n", more_headers,
                      "Content-Length: ", body.size(), "\r\n\r\n", body);
}

TEST(HttpServerTest, AnswersPipelinedRequestsInOrder) {
  auto server = StartServer();
  RawConnection c(server->port());
  c.Send(Post("/one", "1") + Post("/two", "22") +
         "GET /three HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(BodyOf(c.Read())["path"], "/one");
  RawReply two = c.Read();
  EXPECT_EQ(BodyOf(two)["path"], "/two");
  EXPECT_EQ(BodyOf(two)["body"], "22");
  RawReply three = c.Read();
  EXPECT_EQ(three.status, 200);
  EXPECT_EQ(BodyOf(three)["method"], "GET");
  EXPECT_FALSE(absl::StrContains(three.head, "Connection: close"));
}

TEST(HttpServerTest, ReadsARequestThatArrivesInPieces) {
  auto server = StartServer();
  RawConnection c(server->port());
  const std::string request =
      Post("/slow", R"({"a": "bcdefgh"})", "Authorization: Bearer abc\r\n");
  for (size_t i = 0; i < request.size(); i += 3) {
    c.Send(request.substr(i, 3));
    absl::SleepFor(absl::Milliseconds(1));
  }
  Json body = BodyOf(c.Read());
  EXPECT_EQ(body["body"], R"({"a": "bcdefgh"})");
  EXPECT_EQ(body["authorization"], "Bearer abc");
}

// A malformed line is refused when it arrives in pieces as when it arrives
// at once. The request may take an hour, so only the refusal can answer.
TEST(HttpServerTest, RefusesAMalformedHeaderThatArrivesInPieces) {
  HttpServer::Options options;
  options.request_timeout = absl::Hours(1);
  for (const std::string& bad :
       {std::string("GET / HTTP/1.1\r\n\rX"),
        std::string("GET / HTTP/1.1\r\nHo st: x\r\n"),
        std::string("GET / HTTP/1.1\r\nX: a\x01b\r\n")}) {
    auto server = StartServer(Echo, options);
    RawConnection c(server->port());
    c.Send("GET / HT");
    absl::SleepFor(absl::Milliseconds(20));  // read apart, as a first piece
    c.Send(bad.substr(8));
    RawReply reply = c.Read();
    EXPECT_EQ(reply.status, 400) << bad;
  }
}

TEST(HttpServerTest, ReadsAChunkedBody) {
  auto server = StartServer();
  RawConnection c(server->port());
  c.Send(
      "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
  EXPECT_EQ(BodyOf(c.Read())["body"], "hello world");
}

TEST(HttpServerTest, SaysContinueBeforeTheBodyWhenAsked) {
  auto server = StartServer();
  RawConnection c(server->port());
  c.Send(
      "POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
      "Content-Length: 4\r\n\r\n");
  RawReply go = c.Read();
  EXPECT_EQ(go.status, 100);
  c.Send("body");
  RawReply reply = c.Read();
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(BodyOf(reply)["body"], "body");
}

// The path stays as sent: an encoded '/' must not split a segment before
// routes are matched (the router decodes what they capture).
TEST(HttpServerTest, DecodesTheQueryAndLeavesThePathAsSent) {
  auto server = StartServer();
  RawConnection c(server->port());
  c.Send(
      "GET /jobs/a%2Fb%20c+d?state=dead&x=1+2%21&flag HTTP/1.1\r\nHost: "
      "x\r\n\r\n");
  Json body = BodyOf(c.Read());
  EXPECT_EQ(body["path"], "/jobs/a%2Fb%20c+d");
  EXPECT_EQ(body["query"],
            Json::parse(R"([["state","dead"],["x","1 2!"],["flag",""]])"));
}

TEST(HttpServerTest, AnswersAHeadWithTheHeadersOnly) {
  auto server = StartServer();
  RawConnection c(server->port());
  c.Send(
      "HEAD /h HTTP/1.1\r\nHost: x\r\n\r\nGET /after HTTP/1.1\r\nHost: "
      "x\r\n\r\n");
  RawReply head = c.Read(/*head_only=*/true);
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(absl::StrContains(head.head, "Content-Length: "));
  // The next reply follows at once: the HEAD's had no body.
  EXPECT_EQ(BodyOf(c.Read())["path"], "/after");
}

// A refusal is the routes' JSON error, and the connection is closed.
void ExpectRefused(RawConnection& c, int status, const std::string& code) {
  RawReply reply = c.Read();
  EXPECT_EQ(reply.status, status) << reply.head << reply.body;
  EXPECT_EQ(BodyOf(reply)["code"], code) << reply.body;
  EXPECT_TRUE(absl::StrContains(reply.head, "Connection: close"));
  EXPECT_TRUE(c.Closed());
}

TEST(HttpServerTest, RefusesABodyOverTheLimit) {
  HttpServer::Options options;
  options.max_body_bytes = 100;
  auto server = StartServer(Echo, options);
  RawConnection c(server->port());
  c.Send(Post("/big", std::string(101, 'x')));
  ExpectRefused(c, 413, "RESOURCE_EXHAUSTED");
  // At the limit is fine.
  RawConnection d(server->port());
  d.Send(Post("/big", std::string(100, 'x')));
  EXPECT_EQ(d.Read().status, 200);
}

// A client still sending a refused body gets the refusal and then the end
// of the connection. (Over loopback a reset would not lose the reply
// either, so this does not show why the server lingers before closing.)
TEST(HttpServerTest, RefusesALargeBodyWhileItIsStillComing) {
  HttpServer::Options options;
  options.max_body_bytes = 1000;
  auto server = StartServer(Echo, options);
  for (int i = 0; i < 5; ++i) {
    RawConnection c(server->port());
    const std::string body(4 << 20, 'x');
    std::thread sender([&] { c.SendWhatGoes(Post("/big", body)); });
    // Read only once the server has answered and stopped reading.
    absl::SleepFor(absl::Milliseconds(50));
    ExpectRefused(c, 413, "RESOURCE_EXHAUSTED");
    sender.join();
  }
}

// Without a Content-Length or chunks a request has no body (RFC 9112, 6.3):
// what follows it is the next request, here not one.
TEST(HttpServerTest, APostThatDoesNotSayHowLongItsBodyIsHasNone) {
  auto server = StartServer();
  RawConnection c(server->port());
  c.Send("POST /p HTTP/1.1\r\nHost: x\r\n\r\n{}");
  RawReply reply = c.Read();
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(BodyOf(reply)["body"], "");
  ExpectRefused(c, 400, "INVALID_ARGUMENT");
}

TEST(HttpServerTest, RefusesWhatIsNotHttp) {
  auto server = StartServer();
  RawConnection c(server->port());
  c.Send("HELLO THERE\r\n\r\n");
  ExpectRefused(c, 400, "INVALID_ARGUMENT");
}

TEST(HttpServerTest, RefusesHeadersOverTheLimit) {
  auto server = StartServer();
  RawConnection c(server->port());
  c.Send(absl::StrCat("GET / HTTP/1.1\r\nHost: x\r\nX-Long: ",
                      std::string(9000, 'a'), "\r\n\r\n"));
  ExpectRefused(c, 431, "RESOURCE_EXHAUSTED");
}

TEST(HttpServerTest, ClosesWhenTheClientAsks) {
  auto server = StartServer();
  RawConnection c(server->port());
  c.Send("GET /bye HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  RawReply reply = c.Read();
  EXPECT_EQ(reply.status, 200);
  EXPECT_TRUE(absl::StrContains(reply.head, "Connection: close"));
  EXPECT_TRUE(c.Closed());
  // HTTP/1.0 closes unless asked to keep alive.
  RawConnection old(server->port());
  old.Send("GET /old HTTP/1.0\r\n\r\n");
  EXPECT_EQ(old.Read().status, 200);
  EXPECT_TRUE(old.Closed());
}

TEST(HttpServerTest, ClosesAnIdleConnectionAfterTheKeepAlive) {
  HttpServer::Options options;
  options.keep_alive = absl::Milliseconds(200);
  auto server = StartServer(Echo, options);
  RawConnection c(server->port());
  c.Send("GET /once HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(c.Read().status, 200);
  // Closed by the server well before this client's own 10 s timeout.
  EXPECT_TRUE(c.Closed());
}

TEST(HttpServerTest, SkipsEmptyLinesBeforeARequest) {
  auto server = StartServer();
  RawConnection c(server->port());
  c.Send(Post("/one", "1") + "\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(BodyOf(c.Read())["path"], "/one");
  EXPECT_EQ(BodyOf(c.Read())["path"], "/two");
}

// Some clients send an empty line after a body: the connection is still
// idle (the idle limit applies, and a drain closes it), not a request begun.
TEST(HttpServerTest, AStrayEmptyLineLeavesTheConnectionIdle) {
  HttpServer::Options options;
  options.keep_alive = absl::Milliseconds(200);
  options.request_timeout = absl::Hours(1);
  auto server = StartServer(Echo, options);
  RawConnection c(server->port());
  c.Send(Post("/one", "1") + "\r\n");
  EXPECT_EQ(c.Read().status, 200);
  EXPECT_TRUE(c.Closed());
}

TEST(HttpServerTest, KeepsAnHttp10ConnectionAliveWhenAskedAndSaysSo) {
  auto server = StartServer();
  RawConnection c(server->port());
  const std::string request =
      "GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
  c.Send(request);
  RawReply first = c.Read();
  EXPECT_EQ(first.status, 200);
  EXPECT_TRUE(absl::StrContains(first.head, "Connection: keep-alive"));
  c.Send(request);
  EXPECT_EQ(c.Read().status, 200);
}

TEST(HttpServerTest, DoesNotSayContinueToHttp10) {
  auto server = StartServer();
  RawConnection c(server->port());
  c.Send(
      "POST /e HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 4\r\n"
      "\r\n");
  // The body apart from the headers, as a client waiting for a 100 would
  // send it: only a server that has read the headers alone could send one.
  absl::SleepFor(absl::Milliseconds(50));
  c.Send("body");
  RawReply reply = c.Read();
  EXPECT_EQ(reply.status, 200);  // not 100
  EXPECT_EQ(BodyOf(reply)["body"], "body");
}

TEST(HttpServerTest, AnswersAHandlerThatThrowsWith500) {
  auto server =
      StartServer([](const HttpRequest& request, HttpResponse& response) {
        if (request.path == "/throw") throw std::runtime_error("boom");
        Echo(request, response);
      });
  RawConnection c(server->port());
  c.Send(
      "GET /throw HTTP/1.1\r\nHost: x\r\n\r\nGET /fine HTTP/1.1\r\nHost: "
      "x\r\n\r\n");
  RawReply failed = c.Read();
  EXPECT_EQ(failed.status, 500);
  EXPECT_EQ(BodyOf(failed)["code"], "INTERNAL");
  EXPECT_EQ(BodyOf(c.Read())["path"], "/fine");
}

// The parser does not bound a chunk's size line: the reader does.
TEST(HttpServerTest, RefusesAChunkLineThatNeverEnds) {
  auto server = StartServer();
  RawConnection c(server->port());
  c.Send("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;");
  std::thread sender([&] {
    c.SendWhatGoes(std::string(1 << 20, 'e'));  // a chunk extension
  });
  ExpectRefused(c, 400, "INVALID_ARGUMENT");
  sender.join();
}

TEST(HttpServerTest, ClosesARequestThatTakesTooLong) {
  HttpServer::Options options;
  options.request_timeout = absl::Milliseconds(300);
  options.keep_alive = absl::Hours(1);  // not what ends it
  auto server = StartServer(Echo, options);
  RawConnection c(server->port());
  // A byte every 20 ms, for longer than Closed() waits: no read waits
  // long, so only a limit on the whole request ends it.
  const std::string request = Post("/slow", std::string(100'000, 'x'));
  absl::Notification closed;
  std::thread trickle([&] {
    for (size_t i = 0; i < 600 && !closed.HasBeenNotified(); ++i) {
      if (!c.SendWhatGoes(request.substr(i, 1))) return;
      absl::SleepFor(absl::Milliseconds(20));
    }
  });
  EXPECT_TRUE(c.Closed());
  closed.Notify();
  trickle.join();
}

// A client that reads, but slowly, is not waited for longer than a reply
// may take: each write makes some progress, so only a limit on the whole
// reply ends it.
TEST(HttpServerTest, GivesUpOnAReplyTheClientReadsTooSlowly) {
  HttpServer::Options options;
  options.reply_timeout = absl::Milliseconds(200);
  const size_t size = 32 << 20;
  auto server = StartServer(
      [size](const HttpRequest&, HttpResponse& response) {
        response.body.assign(size, 'x');
      },
      options);
  RawConnection c(server->port());
  c.Send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  // 32 KiB every 10 ms: the whole would take 10 s.
  const size_t received = c.ReadSlowly(32 << 10, absl::Milliseconds(10));
  EXPECT_LT(received, size);  // the server closed before the end
}

TEST(HttpServerTest, DrainClosesIdleConnectionsAndAnswersBusyOnes) {
  absl::Notification busy, release;
  HttpServer::Options options;
  options.keep_alive = absl::Hours(1);  // only the drain closes them
  auto server = StartServer(
      [&](const HttpRequest& request, HttpResponse& response) {
        if (request.path == "/wait") {
          busy.Notify();
          release.WaitForNotification();
        }
        Echo(request, response);
      },
      options);
  RawConnection idle(server->port());
  idle.Send("GET /first HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(idle.Read().status, 200);
  RawConnection working(server->port());
  working.Send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n");
  busy.WaitForNotification();

  absl::Notification drained;
  std::thread drain([&] {
    server->Drain();
    drained.Notify();
  });
  // The idle one is closed without waiting for the busy one.
  EXPECT_TRUE(idle.Closed());
  EXPECT_FALSE(drained.HasBeenNotified());
  release.Notify();
  RawReply reply = working.Read();
  EXPECT_EQ(reply.status, 200);
  EXPECT_TRUE(absl::StrContains(reply.head, "Connection: close"));
  EXPECT_TRUE(working.Closed());
  drain.join();
  // No new connections once drained.
  EXPECT_FALSE(CanConnect(server->port()));
}

// The request may take an hour to arrive and the connection may idle for
// one: only the drain's grace can end it, so the drain returns.
TEST(HttpServerTest, DrainDoesNotWaitForAHalfSentRequest) {
  HttpServer::Options options;
  options.keep_alive = absl::Hours(1);
  options.request_timeout = absl::Hours(1);
  options.drain_read_grace = absl::Milliseconds(100);
  auto server = StartServer(Echo, options);
  RawConnection half(server->port());
  // The "100 Continue" says the server is reading this request.
  half.Send(
      "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
      "Expect: 100-continue\r\n\r\nabc");
  RawReply go = half.Read(/*head_only=*/true);
  ASSERT_EQ(go.status, 100);

  absl::Notification drained;
  std::thread drain([&] {
    server->Drain();
    drained.Notify();
  });
  EXPECT_TRUE(drained.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(half.Closed());
  drain.join();
}

// Every reply carries the headers the server was given, the transport's
// own refusals too.
TEST(HttpServerTest, EveryReplyCarriesTheCommonHeaders) {
  HttpServer::Options options;
  options.headers = {"X-Common: yes", "X-Other: 1"};
  auto server = StartServer(Echo, options);
  RawConnection c(server->port());
  c.Send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  RawReply ok = c.Read();
  EXPECT_EQ(ok.status, 200);
  EXPECT_TRUE(absl::StrContains(ok.head, "X-Common: yes\r\nX-Other: 1\r\n"))
      << ok.head;
  RawConnection bad(server->port());
  bad.Send("NOT HTTP\r\n\r\n");
  RawReply refused = bad.Read();
  EXPECT_EQ(refused.status, 400);
  EXPECT_TRUE(absl::StrContains(refused.head, "X-Common: yes")) << refused.head;
}

TEST(HttpServerTest, AnHttp11RequestWithoutHostIsRefused) {
  auto server = StartServer();
  RawConnection old(server->port());
  old.Send("GET /a HTTP/1.0\r\n\r\n");
  EXPECT_EQ(old.Read().status, 200);
  RawConnection c(server->port());
  c.Send("GET /a HTTP/1.1\r\n\r\n");
  EXPECT_EQ(c.Read().status, 400);
}

// A coding the server does not undo would leave the body read as plain.
TEST(HttpServerTest, OnlyTheChunkedTransferCodingIsTaken) {
  auto server = StartServer();
  RawConnection c(server->port());
  c.Send(
      "POST /z HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n"
      "\r\n2\r\n{}\r\n0\r\n\r\n");
  EXPECT_EQ(c.Read().status, 400);
  RawConnection plain(server->port());
  plain.Send(
      "POST /z HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n"
      "2\r\n{}\r\n0\r\n\r\n");
  EXPECT_EQ(BodyOf(plain.Read())["body"], "{}");
}

// Trailer fields would be merged into the header's: a trailer could stand
// in for a Content-Type or an Origin the header did not have.
TEST(HttpServerTest, TrailerFieldsAreRefused) {
  HttpRequest seen;
  auto server =
      StartServer([&](const HttpRequest& request, HttpResponse& response) {
        seen = request;
        Echo(request, response);
      });
  RawConnection c(server->port());
  c.Send(
      "POST /t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "2\r\n{}\r\n0\r\nContent-Type: application/json\r\n\r\n");
  EXPECT_EQ(c.Read().status, 400);
  EXPECT_EQ(seen.path, "");  // never handed on
}

// A chunk's extensions are bounded as a header line is, however they
// arrive (in one piece, here).
TEST(HttpServerTest, RefusesAChunkExtensionOverTheLineLimit) {
  auto server = StartServer();
  RawConnection c(server->port());
  c.Send(absl::StrCat(
      "POST /e HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "2;",
      std::string(9000, 'e'), "\r\n{}\r\n0\r\n\r\n"));
  EXPECT_EQ(c.Read().status, 400);
}

// Empty lines do not keep a connection alive past its idle time: the
// client below sends one every 20 ms, for at most 20 s, and the server
// closes the connection after its 300 ms.
TEST(HttpServerTest, EmptyLinesDoNotExtendTheIdleTime) {
  HttpServer::Options options;
  options.keep_alive = absl::Milliseconds(300);
  auto server = StartServer(Echo, options);
  RawConnection c(server->port());
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  bool closed = false;
  while (!closed && absl::Now() < give_up) {
    closed = !c.SendWhatGoes("\r\n");
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_TRUE(closed) << "still open after 20 s of empty lines";
}

}  // namespace
}  // namespace serve
}  // namespace delayq
