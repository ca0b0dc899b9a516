// Copyright delayq authors.

#include "backends/redis/client/link.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/redis/client/reply_reader.h"
#include "backends/redis/client/tls.h"
#include "src/common/status_macros.h"

namespace delayq {
namespace redis_internal {
namespace {

absl::Status Closed(absl::string_view endpoint, absl::string_view what) {
  return absl::UnavailableError(
      absl::StrCat("redis ", endpoint, ": ", what, ": connection closed"));
}

absl::Status SocketError(absl::string_view endpoint, absl::string_view what,
                         int error) {
  return absl::UnavailableError(
      absl::StrCat("redis ", endpoint, ": ", what, ": ", strerror(error)));
}

// Bytes on a connection nobody is using: they would pass for the next
// call's reply, and every later reply would be one call out of step.
absl::Status Unasked(absl::string_view endpoint) {
  return absl::InternalError(absl::StrCat(
      "redis ", endpoint, ": the server sent bytes no call asked for"));
}

// A new non-blocking, close-on-exec socket connected (or connecting: the
// caller waits for it to be writable) to `addr`; -1 with errno.
int StartConnect(int family, const sockaddr* addr, socklen_t len) {
  const int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, addr, len) == 0 || errno == EINPROGRESS) return fd;
  const int error = errno;
  close(fd);
  errno = error;
  return -1;
}

// Waits for a connect under way on `fd` to end; OK once connected.
absl::Status FinishConnect(int fd, Clock::time_point deadline, int cancel_fd,
                           absl::string_view endpoint) {
  DQ_RETURN_IF_ERROR(
      Await(fd, POLLOUT, deadline, cancel_fd, endpoint, "connect"));
  int error = 0;
  socklen_t len = sizeof(error);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) error = errno;
  if (error != 0) return SocketError(endpoint, "connect", error);
  return absl::OkStatus();
}

absl::StatusOr<int> ConnectUnix(const LinkTarget& target,
                                Clock::time_point deadline, int cancel_fd) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (target.unix_socket.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "redis ", target.unix_socket, ": a socket path may have at most ",
        sizeof(addr.sun_path) - 1, " bytes"));
  }
  memcpy(addr.sun_path, target.unix_socket.data(), target.unix_socket.size());
  const int fd =
      StartConnect(AF_UNIX, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  if (fd < 0) return SocketError(target.endpoint, "connect", errno);
  absl::Status s = FinishConnect(fd, deadline, cancel_fd, target.endpoint);
  if (!s.ok()) {
    close(fd);
    return s;
  }
  return fd;
}

// Tries each address the host resolves to, in the resolver's order, until
// one connects.
absl::StatusOr<int> ConnectTcp(const LinkTarget& target,
                               Clock::time_point deadline, int cancel_fd) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = absl::StrCat(target.port);
  if (int rc = getaddrinfo(target.host.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("redis ", target.endpoint, ": connect: cannot resolve '",
                     target.host, "': ", gai_strerror(rc)));
  }
  absl::Status last = absl::UnavailableError(absl::StrCat(
      "redis ", target.endpoint, ": connect: the host has no address"));
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = StartConnect(a->ai_family, a->ai_addr, a->ai_addrlen);
    if (fd < 0) {
      last = SocketError(target.endpoint, "connect", errno);
      continue;
    }
    last = FinishConnect(fd, deadline, cancel_fd, target.endpoint);
    if (!last.ok()) {
      close(fd);
      fd = -1;
      if (!absl::IsUnavailable(last)) break;  // out of time, or cancelled
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return last;
  // Calls are small and latency-bound: no waiting to fill a segment.
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// The status for an OpenSSL read or write that failed with `e`
// (SSL_get_error()): what OpenSSL's error queue or errno says.
absl::Status TlsIoError(int e, absl::string_view endpoint,
                        absl::string_view what) {
  char text[256] = "connection closed";
  if (unsigned long code = ERR_peek_last_error(); code != 0) {
    ERR_error_string_n(code, text, sizeof(text));
  } else if (e == SSL_ERROR_SYSCALL && errno != 0) {
    snprintf(text, sizeof(text), "%s", strerror(errno));
  }
  return absl::UnavailableError(
      absl::StrCat("redis ", endpoint, ": ", what, ": ", text));
}

// What one non-blocking recv() or send() returned (`n`, and errno): the
// bytes, 0 when the peer closed, or -1 with `*wait` set to `blocked` when it
// would block, or with `*error` set.
ssize_t SocketOutcome(ssize_t n, short blocked, absl::string_view endpoint,
                      absl::string_view what, short* wait,
                      absl::Status* error) {
  if (n >= 0) return n;
  if (errno == EAGAIN || errno == EWOULDBLOCK) {
    *wait = blocked;
  } else {
    *error = SocketError(endpoint, what, errno);
  }
  return -1;
}

// The same for SSL_read() or SSL_write() on `ssl`: the bytes, 0 when the
// peer closed the TLS session, or -1 with `*wait` (the socket event OpenSSL
// needs) or `*error` set.
ssize_t TlsOutcome(SSL* ssl, int n, absl::string_view endpoint,
                   absl::string_view what, short* wait, absl::Status* error) {
  if (n > 0) return n;
  const int e = SSL_get_error(ssl, n);
  if (e == SSL_ERROR_WANT_READ) {
    *wait = POLLIN;
  } else if (e == SSL_ERROR_WANT_WRITE) {
    *wait = POLLOUT;
  } else if (e == SSL_ERROR_ZERO_RETURN) {
    return 0;
  } else {
    *error = TlsIoError(e, endpoint, what);
  }
  return -1;
}

absl::Status TimedOut(absl::string_view endpoint, absl::string_view what) {
  return absl::DeadlineExceededError(absl::StrCat(
      "redis ", endpoint, ": ", what, ": no answer within the timeout"));
}

}  // namespace

absl::Status Await(int fd, short events, Clock::time_point deadline,
                   int cancel_fd, absl::string_view endpoint,
                   absl::string_view what) {
  for (;;) {
    int timeout_ms = -1;
    if (deadline != kNoDeadline) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return TimedOut(endpoint, what);
      timeout_ms = static_cast<int>(
          std::min<int64_t>(left.count(), std::numeric_limits<int>::max()));
    }
    pollfd fds[2] = {{fd, events, 0}, {cancel_fd, POLLIN, 0}};
    const int n = poll(fds, 2, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SocketError(endpoint, "poll", errno);
    }
    // poll() skips negative descriptors, and reports nothing for them.
    if (fds[1].revents != 0) return absl::CancelledError("redis: cancelled");
    if (fds[0].revents != 0) return absl::OkStatus();
  }
}

Link::Link(int fd, std::string endpoint)
    : fd_(fd), endpoint_(std::move(endpoint)), reader_(NewReplyReader()) {}

Link::~Link() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (reader_ != nullptr) redisReaderFree(reader_);
  close(fd_);
}

absl::StatusOr<std::unique_ptr<Link>> Link::Dial(const LinkTarget& target,
                                                 absl::Duration connect_timeout,
                                                 const TlsContext* tls,
                                                 int cancel_fd) {
  const Clock::time_point deadline =
      Clock::now() + absl::ToChronoMicroseconds(connect_timeout);
  absl::StatusOr<int> fd = target.unix_socket.empty()
                               ? ConnectTcp(target, deadline, cancel_fd)
                               : ConnectUnix(target, deadline, cancel_fd);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<Link> link(new Link(*fd, target.endpoint));
  if (link->reader_ == nullptr) {
    return absl::ResourceExhaustedError("redis: out of memory");
  }
  if (tls != nullptr) {
    DQ_RETURN_IF_ERROR(link->StartTls(*tls, target, deadline, cancel_fd));
  }
  return link;
}

absl::Status Link::StartTls(const TlsContext& tls, const LinkTarget& target,
                            Clock::time_point deadline, int cancel_fd) {
  DQ_ASSIGN_OR_RETURN(ssl_, tls.NewSession(fd_, target.host));
  for (;;) {
    ERR_clear_error();
    const int rc = SSL_connect(ssl_);
    if (rc == 1) return absl::OkStatus();
    const int error = SSL_get_error(ssl_, rc);
    short wait = 0;
    if (error == SSL_ERROR_WANT_READ) wait = POLLIN;
    if (error == SSL_ERROR_WANT_WRITE) wait = POLLOUT;
    if (wait == 0) return tls.HandshakeError(ssl_, error, endpoint_);
    absl::Status waited =
        Await(fd_, wait, deadline, cancel_fd, endpoint_, "TLS handshake");
    if (absl::IsDeadlineExceeded(waited)) {
      // A server port without TLS takes the hello for the start of a
      // command and waits for the rest.
      return absl::DeadlineExceededError(
          absl::StrCat(waited.message(), " (does this port speak TLS?)"));
    }
    DQ_RETURN_IF_ERROR(waited);
  }
}

ssize_t Link::ReadSome(char* buf, size_t size, short* wait,
                       absl::Status* error) {
  if (ssl_ == nullptr) {
    ssize_t n;
    do {
      n = recv(fd_, buf, size, MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return SocketOutcome(n, POLLIN, endpoint_, "read", wait, error);
  }
  internal::MutexLock lock(&ssl_mu_);
  ERR_clear_error();
  const int n =
      SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(size, INT32_MAX)));
  return TlsOutcome(ssl_, n, endpoint_, "read", wait, error);
}

ssize_t Link::WriteSome(absl::string_view bytes, short* wait,
                        absl::Status* error) {
  if (ssl_ == nullptr) {
    ssize_t n;
    do {
      n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return SocketOutcome(n, POLLOUT, endpoint_, "write", wait, error);
  }
  internal::MutexLock lock(&ssl_mu_);
  ERR_clear_error();
  const int n =
      SSL_write(ssl_, bytes.data(),
                static_cast<int>(std::min<size_t>(bytes.size(), INT32_MAX)));
  return TlsOutcome(ssl_, n, endpoint_, "write", wait, error);
}

absl::Status Link::Write(absl::string_view bytes, Clock::time_point deadline,
                         int cancel_fd) {
  while (!bytes.empty()) {
    short wait = 0;
    absl::Status error;
    const ssize_t n = WriteSome(bytes, &wait, &error);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (!error.ok()) return error;
    if (wait == 0) return Closed(endpoint_, "write");
    DQ_RETURN_IF_ERROR(
        Await(fd_, wait, deadline, cancel_fd, endpoint_, "write"));
  }
  return absl::OkStatus();
}

absl::Status Link::Feed(const char* data, size_t n) {
  if (redisReaderFeed(reader_, data, n) != REDIS_OK) {
    return absl::ResourceExhaustedError(
        absl::StrCat("redis ", endpoint_, ": reply: ", reader_->errstr));
  }
  return absl::OkStatus();
}

absl::StatusOr<Reply> Link::Parsed() {
  void* raw = nullptr;
  if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
    return absl::InternalError(absl::StrCat(
        "redis ", endpoint_, ": reply does not parse: ", reader_->errstr));
  }
  return Reply(static_cast<redisReply*>(raw));
}

absl::Status Link::Receive(Clock::time_point deadline, int cancel_fd) {
  char buf[16 * 1024];
  for (;;) {
    // The deadline holds while bytes keep coming too: a server that sends
    // a reply without end (a header announcing billions of elements, then
    // elements) would otherwise keep the call, and the memory its reply
    // takes, growing for as long as it sends.
    if (deadline != kNoDeadline && Clock::now() >= deadline) {
      return TimedOut(endpoint_, "reply");
    }
    short wait = 0;
    absl::Status error;
    const ssize_t n = ReadSome(buf, sizeof(buf), &wait, &error);
    if (n > 0) {
      DQ_RETURN_IF_ERROR(Feed(buf, static_cast<size_t>(n)));
      // TLS may hold more that has arrived (decrypted, or a record not yet
      // read): take it now, since the socket will not say so.
      bool more = false;
      if (ssl_ != nullptr) {
        internal::MutexLock lock(&ssl_mu_);
        more = SSL_has_pending(ssl_) == 1;
      }
      if (!more) return absl::OkStatus();
      continue;
    }
    if (n == 0) return Closed(endpoint_, "reply");
    if (!error.ok()) return error;
    DQ_RETURN_IF_ERROR(
        Await(fd_, wait, deadline, cancel_fd, endpoint_, "reply"));
  }
}

absl::StatusOr<Reply> Link::Next(Clock::time_point deadline, int cancel_fd) {
  for (;;) {
    DQ_ASSIGN_OR_RETURN(Reply reply, Parsed());
    if (reply != nullptr) return reply;
    DQ_RETURN_IF_ERROR(Receive(deadline, cancel_fd));
  }
}

absl::Status Link::CheckIdle() {
  // Bytes received with the last call's replies, after them: read off the
  // socket already, so no look at it would see them.
  if (reader_->len > reader_->pos) return Unasked(endpoint_);
  char byte;
  ssize_t n;
  if (ssl_ == nullptr) {
    do {
      n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return absl::OkStatus();
    }
    if (n < 0) return SocketError(endpoint_, "idle connection", errno);
  } else {
    // Not a peek at the socket: TLS brings bytes that are no reply (a
    // session ticket after the handshake), which SSL_peek() takes in.
    short wait = 0;
    absl::Status error;
    {
      internal::MutexLock lock(&ssl_mu_);
      ERR_clear_error();
      const int r = SSL_peek(ssl_, &byte, 1);
      n = r;
      if (r <= 0) {
        const int e = SSL_get_error(ssl_, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) wait = 1;
        n = 0;
      }
    }
    if (wait != 0) return absl::OkStatus();
  }
  if (n > 0) return Unasked(endpoint_);
  return Closed(endpoint_, "idle connection");
}

void Link::Shutdown() { shutdown(fd_, SHUT_RDWR); }

}  // namespace redis_internal
}  // namespace delayq
