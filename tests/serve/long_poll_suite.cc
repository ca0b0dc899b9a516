// Copyright delayq authors.
//
// A thousand clients wait on reserve; one job comes; exactly one of them
// gets it and every other one gets an empty reply when its wait ends.
//
// The clients are plain non-blocking sockets on one thread, so the test
// costs a thousand file descriptors rather than a thousand threads.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/serve/api_suite.h"

namespace delayq {
namespace testing {
namespace {

constexpr int kClients = 1000;

struct RawClient {
  int fd = -1;
  std::string out;  // what is left to send
  std::string in;   // what came back
  bool done = false;
};

// A connected non-blocking socket with `request` queued to send.
RawClient Connect(int port, const std::string& request) {
  RawClient c;
  c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  c.out = request;
  return c;
}

// Sends what is queued and reads replies until every client is done (the
// server closed the connection) or, when `until_sent`, until every request
// is sent.
void Pump(std::vector<RawClient>& clients, bool until_sent) {
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<RawClient*> who;
    for (RawClient& c : clients) {
      if (c.done || (until_sent && c.out.empty())) continue;
      fds.push_back(
          {c.fd, static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
      who.push_back(&c);
    }
    if (fds.empty()) return;
    ASSERT_GE(poll(fds.data(), fds.size(), 120'000), 1)
        << "no client made progress in 2 minutes";
    for (size_t i = 0; i < fds.size(); ++i) {
      RawClient& c = *who[i];
      if (fds[i].revents & POLLOUT) {
        const ssize_t n = write(c.fd, c.out.data(), c.out.size());
        if (n > 0) c.out.erase(0, n);
      } else if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[4096];
        const ssize_t n = read(c.fd, buf, sizeof(buf));
        if (n > 0) {
          c.in.append(buf, n);
        } else {
          c.done = true;
          close(c.fd);
        }
      }
    }
  }
}

// The value of a metric line "name value" in Prometheus text.
int MetricValue(const std::string& text, const std::string& name) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
    int value = 0;
    if (parts.size() == 2 && parts[0] == name &&
        absl::SimpleAtoi(parts[1], &value)) {
      return value;
    }
  }
  return -1;
}

TEST_P(ApiTest, OneJobGoesToExactlyOneOfAThousandWaitingClients) {
  const std::string body = "{\"wait_ms\": 20000}";
  const std::string request = absl::StrCat(
      "POST /v1/topics/lp/reserve HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\nConnection: close\r\n"
      "Content-Length: ",
      body.size(), "\r\n\r\n", body);
  std::vector<RawClient> clients;
  clients.reserve(kClients);
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(Connect(server_->port(), request));
    ASSERT_GE(clients.back().fd, 0);
  }
  Pump(clients, /*until_sent=*/true);
  // Wait (no deadline but the test's own) until every reserve is waiting in
  // the server, so the job surely arrives while all of them wait.
  for (int waiting = 0; waiting < kClients;) {
    const HttpReply metrics = api_->Get("/metrics");
    ASSERT_EQ(metrics.status, 200) << "the server is gone";
    waiting = MetricValue(metrics.body, "delayq_http_reserves_waiting");
    ASSERT_LE(waiting, kClients);
    for (const RawClient& c : clients) {
      ASSERT_TRUE(c.in.empty()) << "a client was answered early: " << c.in;
    }
    if (waiting < kClients) absl::SleepFor(absl::Milliseconds(20));
  }
  const std::string id = Add("lp", {{"payload", "the one"}});
  Pump(clients, /*until_sent=*/false);

  int leases = 0, empty = 0;
  for (const RawClient& c : clients) {
    ASSERT_TRUE(absl::StartsWith(c.in, "HTTP/1.1 200")) << c.in;
    const Json reply = Json::parse(c.in.substr(c.in.find("\r\n\r\n") + 4));
    const size_t n = reply["leases"].size();
    if (n == 1) {
      ++leases;
      EXPECT_EQ(reply["leases"][0]["job"]["id"], id);
    } else {
      EXPECT_EQ(n, 0u);
      ++empty;
    }
  }
  EXPECT_EQ(leases, 1);
  EXPECT_EQ(empty, kClients - 1);
  HttpReply job = api_->Get("/v1/jobs/" + id);
  EXPECT_EQ(job.json["state"], "reserved");
  EXPECT_EQ(job.json["attempts"], 1);
}

}  // namespace
}  // namespace testing
}  // namespace delayq
