// Copyright delayq authors.
//
// link.h — one connection to a Redis server: a non-blocking socket, TLS over
// it when the store asks for it, and the parser of the replies it brings.
// Private to the Redis backend.
//
// Every connection the backend makes is a Link: the pool's shared
// connections, the news subscription, the sentinels' queries and their
// switch notices. hiredis only parses replies here; connecting, writing and
// reading are done by the Link, so that the plain and the TLS case are one
// code path and no write can raise SIGPIPE (send() with MSG_NOSIGNAL, and a
// socket BIO of our own under OpenSSL, whose own uses write()).
//
// Thread-safety: one thread may write (Write()) while another reads
// (Receive(), Parsed()); with TLS their OpenSSL calls take turns on a
// mutex, since one SSL object must not be used by two threads at once.
// Waits happen outside it. Shutdown() may be called from any thread.

#ifndef DELAYQ_BACKENDS_REDIS_CLIENT_LINK_H_
#define DELAYQ_BACKENDS_REDIS_CLIENT_LINK_H_

#include <hiredis/hiredis.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "src/common/mutex.h"

typedef struct ssl_st SSL;

namespace delayq {
namespace redis_internal {

class TlsContext;

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

using Clock = std::chrono::steady_clock;

// No deadline, for Await() and the Link's waits.
inline constexpr Clock::time_point kNoDeadline = Clock::time_point::max();

// Await()
//
// Waits until `fd` has `events` (fd < 0: only for the deadline), until
// `deadline`, or until `cancel_fd` (when >= 0) is readable. OK when `fd` is
// ready; DeadlineExceeded ("redis ENDPOINT: WHAT: no answer within the
// timeout"); Cancelled ("redis: cancelled") when `cancel_fd` fired.
absl::Status Await(int fd, short events, Clock::time_point deadline,
                   int cancel_fd, absl::string_view endpoint,
                   absl::string_view what);

// Where a Link goes.
struct LinkTarget {
  std::string host;  // for TCP
  int port = 0;
  std::string unix_socket;  // when not empty, used instead of host and port
  std::string endpoint;     // how messages name it
};

class Link {
 public:
  // Dial()
  //
  // Connects to `target` (resolving its host) within `connect_timeout`,
  // then, with `tls`, makes the TLS handshake within the same time and
  // checks the server's certificate as `tls` says. Cancelled as soon as
  // `cancel_fd` (if >= 0) is readable. Unavailable when the server cannot
  // be reached or closes the connection, DeadlineExceeded when it does not
  // answer in time, FailedPrecondition when its certificate is refused (a
  // configuration error: retrying will not help).
  static absl::StatusOr<std::unique_ptr<Link>> Dial(
      const LinkTarget& target, absl::Duration connect_timeout,
      const TlsContext* tls, int cancel_fd = -1);

  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  int fd() const { return fd_; }

  // Writes all of `bytes` by `deadline`. Unavailable (closed, reset),
  // DeadlineExceeded (no room to write in time), Cancelled.
  absl::Status Write(absl::string_view bytes, Clock::time_point deadline,
                     int cancel_fd = -1);

  // The next reply already received, or null when none is complete yet.
  // Internal when the bytes do not parse as RESP.
  absl::StatusOr<Reply> Parsed();

  // Waits until bytes arrive (at most until `deadline`) and hands every
  // byte that has arrived to the parser. Unavailable when the server closed
  // the connection, DeadlineExceeded, Cancelled.
  absl::Status Receive(Clock::time_point deadline, int cancel_fd = -1);

  // The next reply: Parsed(), receiving until one is complete.
  absl::StatusOr<Reply> Next(Clock::time_point deadline, int cancel_fd = -1);

  // For a connection nobody is using, so no reply is due: OK when nothing
  // has arrived; Unavailable when the server closed it; Internal when it
  // sent bytes nobody asked for (they would pass for the next reply). One
  // non-blocking call.
  absl::Status CheckIdle();

  // Ends the connection for reads and writes under way in other threads:
  // their waits return at once and they fail.
  void Shutdown();

 private:
  Link(int fd, std::string endpoint);
  // The TLS handshake on the connected socket.
  absl::Status StartTls(const TlsContext& tls, const LinkTarget& target,
                        Clock::time_point deadline, int cancel_fd);
  // One read into `buf`: bytes (> 0), 0 when closed; -1 with `wait` set to
  // the events to wait for, or with `error` set.
  ssize_t ReadSome(char* buf, size_t size, short* wait, absl::Status* error);
  ssize_t WriteSome(absl::string_view bytes, short* wait, absl::Status* error);
  absl::Status Feed(const char* data, size_t n);

  const int fd_;
  const std::string endpoint_;
  redisReader* const reader_;
  SSL* ssl_ = nullptr;
  // Held for each OpenSSL call on ssl_; never while waiting.
  internal::Mutex ssl_mu_;
};

}  // namespace redis_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_CLIENT_LINK_H_
