// Copyright delayq authors.

#include "tools/serve/http/http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tools/serve/http/error_reply.h"
#include "tools/serve/http/http_wire.h"

namespace delayq {
namespace serve {
namespace {

// A socket listening on `address`, or why there is none.
absl::StatusOr<int> Listen(const ListenAddress& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  int fd = -1;
  if (getaddrinfo(address.host.empty() ? nullptr : address.host.c_str(),
                  port.c_str(), &hints, &found) == 0) {
    for (addrinfo* at = found; at != nullptr && fd < 0; at = at->ai_next) {
      fd = socket(at->ai_family, at->ai_socktype | SOCK_CLOEXEC,
                  at->ai_protocol);
      if (fd < 0) continue;
      int yes = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
      // A thousand clients connecting at once must not see their SYNs
      // dropped and retried seconds later.
      if (bind(fd, at->ai_addr, at->ai_addrlen) != 0 ||
          listen(fd, SOMAXCONN) != 0) {
        close(fd);
        fd = -1;
      }
    }
    freeaddrinfo(found);
  }
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address.host, ":", address.port,
                     " (in use, or not an address of this machine)"));
  }
  return fd;
}

int PortOf(int fd) {
  sockaddr_storage bound{};
  socklen_t size = sizeof(bound);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size) != 0) {
    return -1;
  }
  if (bound.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

// The reply to a request the transport refuses, or one that failed.
HttpResponse ErrorReply(int status, const std::string& message) {
  HttpResponse response;
  WriteRefusal(response, status, message);
  return response;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const ListenAddress& address, const Options& options, Handler handler) {
  absl::StatusOr<int> fd = Listen(address);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<HttpServer> server(
      new HttpServer(options, std::move(handler)));
  server->listen_fd_ = *fd;
  server->port_ = PortOf(*fd);
  HttpServer* raw = server.get();
  server->acceptor_ = std::thread([raw] { raw->AcceptLoop(); });
  return server;
}

HttpServer::HttpServer(const Options& options, Handler handler)
    : options_(options),
      handler_(std::move(handler)),
      threads_(options.max_connections, options.thread_stack_bytes) {}

HttpServer::~HttpServer() { Drain(); }

void HttpServer::AcceptLoop() {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (Draining()) return;  // Drain() shut the socket
      // Most errors are the pending connection's (it was reset, the
      // network went away) or passing (out of descriptors or memory): the
      // next accept may well succeed. Those that are not come back at
      // once, so wait a little before trying again.
      if (error != EINTR && error != ECONNABORTED) {
        absl::SleepFor(absl::Milliseconds(10));
      }
      continue;
    }
    int yes = 1;
    // A reply leaves at once instead of waiting for the client's delayed
    // ACK of the one before.
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    threads_.Enqueue([this, fd] { Serve(fd); });
  }
}

void HttpServer::Serve(int fd) {
  HttpConnection::Limits limits;
  limits.max_body_bytes = options_.max_body_bytes;
  limits.idle = options_.keep_alive;
  limits.request = options_.request_timeout;
  limits.reply = options_.reply_timeout;
  HttpConnection connection(fd, limits);
  // Destroyed before `connection`, which closes the socket.
  struct Tracked {
    HttpServer* server;
    int fd;
    ~Tracked() { server->Leave(fd); }
  } tracked{this, fd};
  HttpRequest request;
  request.client_gone = [&connection] { return connection.ClientGone(); };
  for (;;) {
    if (!Enter(fd, Phase::kIdle)) break;
    if (!connection.AwaitRequest()) break;
    Enter(fd, Phase::kReading);
    const HttpConnection::Outcome outcome = connection.Read(&request);
    Enter(fd, Phase::kAnswering);
    if (outcome.kind == HttpConnection::Outcome::kBroken) break;
    if (outcome.kind == HttpConnection::Outcome::kRefused) {
      Framing framing;
      framing.close = true;
      if (Send(connection, ErrorReply(outcome.status, outcome.message),
               framing)) {
        connection.Linger();  // the refused request may still be coming
      }
      break;
    }
    HttpResponse response = Answer(request);
    Framing framing;
    framing.head = outcome.head;
    // A request under way when the drain began is answered, and its
    // connection closed.
    framing.close = !outcome.keep_alive || Draining();
    framing.keep_alive_header = !framing.close && outcome.http_1_0;
    if (!Send(connection, std::move(response), framing)) break;
    if (framing.close) {
      if (connection.HasUnread()) connection.Linger();  // requests after it
      break;
    }
  }
}

bool HttpServer::Send(HttpConnection& connection, HttpResponse response,
                      const Framing& framing) {
  response.headers.insert(response.headers.end(), options_.headers.begin(),
                          options_.headers.end());
  return connection.Write(response, framing);
}

HttpResponse HttpServer::Answer(const HttpRequest& request) {
  HttpResponse response;
  try {
    handler_(request, response);
  } catch (const std::exception& e) {
    response = ErrorReply(500, absl::StrCat("the server failed: ", e.what()));
  } catch (...) {
    response = ErrorReply(500, "the server failed");
  }
  return response;
}

bool HttpServer::Enter(int fd, Phase phase) {
  absl::MutexLock lock(&mu_);
  if (phase == Phase::kIdle && draining_) return false;
  // A request that begins after the drain's grace is not waited for.
  if (phase == Phase::kReading && readers_cut_) shutdown(fd, SHUT_RD);
  Phase& now = phases_[fd];
  reading_ += (phase == Phase::kReading) - (now == Phase::kReading);
  now = phase;
  return true;
}

void HttpServer::Leave(int fd) {
  absl::MutexLock lock(&mu_);
  auto it = phases_.find(fd);
  if (it == phases_.end()) return;
  if (it->second == Phase::kReading) --reading_;
  phases_.erase(it);
}

void HttpServer::ShutDownReading(Phase phase) {
  for (const auto& [fd, at] : phases_) {
    if (at == phase) shutdown(fd, SHUT_RD);
  }
}

bool HttpServer::Draining() {
  absl::MutexLock lock(&mu_);
  return draining_;
}

void HttpServer::Drain() {
  absl::MutexLock drain_lock(&drain_mu_);
  {
    absl::MutexLock lock(&mu_);
    draining_ = true;
    // Ends their wait for a request; a reply can still be written.
    ShutDownReading(Phase::kIdle);
  }
  if (listen_fd_ >= 0) shutdown(listen_fd_, SHUT_RDWR);
  {
    // A request on its way gets a moment to arrive whole; then its
    // connection ends too (its client sees it closed unanswered, so it
    // knows the request was not done).
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(
        absl::Condition(
            +[](int* reading) { return *reading == 0; }, &reading_),
        options_.drain_read_grace);
    readers_cut_ = true;
    ShutDownReading(Phase::kReading);
  }
  if (acceptor_.joinable()) acceptor_.join();
  threads_.Shutdown();
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
  }
}

}  // namespace serve
}  // namespace delayq
