// Copyright delayq authors.

#include "bench/serve/bare_reply_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "tests/testing/loopback_port.h"

namespace delayq {
namespace bench {
namespace {

// What delayq serve answers for a route it does not have, in size and kind.
constexpr absl::string_view kBody =
    "{\"code\":\"NOT_FOUND\",\"message\":\"no route POST /v1/no-such-route\"}";

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec / 1e6;
}

std::string Response(int status, absl::string_view reason,
                     absl::string_view body) {
  return absl::StrCat("HTTP/1.1 ", status, " ", reason,
                      "\r\nContent-Type: application/json\r\nContent-Length: ",
                      body.size(), "\r\n\r\n", body);
}

// The largest body the server reads; a longer one ends the connection.
constexpr size_t kMaxBody = 16 << 20;

// The Content-Length of a request's headers; 0 when it has none.
size_t ContentLength(absl::string_view headers) {
  for (absl::string_view line : absl::StrSplit(headers, "\r\n")) {
    constexpr absl::string_view kName = "content-length:";
    if (line.size() > kName.size() &&
        absl::EqualsIgnoreCase(line.substr(0, kName.size()), kName)) {
      size_t n = 0;
      if (absl::SimpleAtoi(
              absl::StripAsciiWhitespace(line.substr(kName.size())), &n)) {
        return n;
      }
    }
  }
  return 0;
}

bool WriteAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    // A client that went away must not kill the server with SIGPIPE.
    const ssize_t n =
        send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Answers the requests of one connection until the client closes it.
void Serve(int fd) {
  static const std::string kNotFound = Response(404, "Not Found", kBody);
  std::string in;
  char buf[16384];
  for (;;) {
    const size_t end = in.find("\r\n\r\n");
    if (end != std::string::npos) {
      const absl::string_view headers(in.data(), end);
      const size_t body = ContentLength(headers);
      if (body > kMaxBody) break;
      const size_t whole = end + 4 + body;
      if (in.size() >= whole) {
        const std::string reply =
            absl::StartsWith(headers, "GET /cpu ")
                ? Response(200, "OK", absl::StrCat(CpuSeconds()))
                : kNotFound;
        in.erase(0, whole);
        if (!WriteAll(fd, reply)) break;
        continue;
      }
    }
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  close(fd);
}

[[noreturn]] void AcceptForever(int listener) {
  for (;;) {
    const int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) {
      // Out of descriptors, say: wait rather than spin.
      if (errno != EINTR) usleep(10'000);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::thread(Serve, fd).detach();
  }
}

}  // namespace

absl::StatusOr<BareReplyServer> BareReplyServer::Fork() {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) return absl::InternalError(std::strerror(errno));
  absl::StatusOr<int> port = testing::BindLoopback(listener);
  if (port.ok() && listen(listener, 128) != 0) {
    port = absl::InternalError(absl::StrCat("listen: ", std::strerror(errno)));
  }
  if (!port.ok()) {
    close(listener);
    return port.status();
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(listener);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // Goes with the benchmark, however it ends.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0);
    AcceptForever(listener);
  }
  close(listener);
  return BareReplyServer(pid, *port);
}

BareReplyServer::BareReplyServer(BareReplyServer&& other) noexcept
    : pid_(other.pid_), port_(other.port_) {
  other.pid_ = 0;
}

BareReplyServer::~BareReplyServer() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

}  // namespace bench
}  // namespace delayq
