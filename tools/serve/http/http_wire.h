// Copyright delayq authors.
//
// HTTP/1.1 on one connected socket: requests read one after another
// (parsed by Boost.Beast's parser; a client may send the next before the
// reply), and replies written each in one system call.
//
// Why not a general HTTP library's server loop: with a blocking socket and
// a thread per connection, a request costs one recv and its reply one
// sendmsg. cpp-httplib's loop polled before every read and write and sent
// headers and body apart, about eleven system calls a request
// (bench/README.md, "HTTP server").
//
// Every wait is bounded, so that a slow or silent client cannot hold a
// thread (or a drain) for long: the wait for a request (`idle`), the
// reading of one (`request`, from its first byte) and the writing of a
// reply (`reply`).

#ifndef DELAYQ_TOOLS_SERVE_HTTP_HTTP_WIRE_H_
#define DELAYQ_TOOLS_SERVE_HTTP_HTTP_WIRE_H_

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <string>

#include "absl/time/time.h"
#include "tools/serve/http/http_message.h"

namespace delayq {
namespace serve {

// How a reply goes out.
struct Framing {
  bool head = false;   // headers only (the reply to a HEAD)
  bool close = false;  // "Connection: close"; the server closes after it
  // "Connection: keep-alive", which an HTTP/1.0 client needs to hear.
  bool keep_alive_header = false;
};

class HttpConnection {
 public:
  // What deadlines are kept by: not moved when the wall clock is set.
  using Clock = std::chrono::steady_clock;

  struct Limits {
    size_t max_body_bytes = 2 << 20;  // larger bodies are refused (413)
    absl::Duration idle = absl::Seconds(5);
    absl::Duration request = absl::Seconds(30);
    absl::Duration reply = absl::Seconds(30);
  };

  // Takes `fd`, a connected socket, and closes it when destroyed.
  HttpConnection(int fd, const Limits& limits);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  int fd() const { return fd_; }

  // Waits until the next request's first bytes are in (or already were),
  // skipping empty lines before it (RFC 9112, 2.2). False when the
  // connection ended first: closed by the client, idle too long, shut
  // down, or sending nothing but empty lines.
  bool AwaitRequest();

  struct Outcome {
    enum Kind {
      kRequest,  // *request is filled in
      kRefused,  // answer `status` with `message`, then close
      kBroken,   // the connection ended mid-request, or the request took
                 // too long: close
    } kind = kBroken;
    int status = 0;
    std::string message;
    bool keep_alive = true;  // kRequest: the client keeps the connection
    bool head = false;       // kRequest: a HEAD (reply without the body)
    bool http_1_0 = false;   // kRequest: keeps alive only when told to
  };
  // Reads the request whose first bytes AwaitRequest() saw. Answers
  // "Expect: 100-continue" itself.
  Outcome Read(HttpRequest* request);

  // Writes `response`; false when the connection broke or the reply took
  // too long.
  bool Write(const HttpResponse& response, const Framing& framing);

  // Whether the client has sent bytes not read yet (a next request).
  bool HasUnread();

  // Whether the client has closed the connection (or it broke), with
  // nothing sent that is not read yet.
  bool ClientGone();

  // Before closing with bytes still coming (a refused request's body,
  // requests after the last answered): closing with them unread resets
  // the connection, and on a real network the reset can overtake the last
  // reply and destroy it (RFC 9112, 9.6). So stop writing, then read and
  // drop what comes for a moment (at most a second, or 16 MiB).
  void Linger();

 private:
  // Appends what the socket has, waiting at most `timeout` for a byte;
  // false when the connection ended or nothing came.
  bool Receive(absl::Duration timeout);
  // Writes all of `iov`, within `deadline`.
  bool Send(iovec* iov, int count, Clock::time_point deadline);
  // Sets the socket's receive or send timeout (`option`), unless it is
  // already `timeout` (`*current`).
  void SetTimeout(int option, absl::Duration timeout, absl::Duration* current);

  const int fd_;
  const Limits limits_;
  absl::Duration receive_timeout_ = absl::ZeroDuration();  // as set
  absl::Duration send_timeout_ = absl::ZeroDuration();     // as set
  std::string buffer_;  // received, not yet parsed: the next request's start
};

// `text` with %XX sequences decoded, and '+' read as a space when
// `plus_is_space` (a query). A '%' not followed by two hex digits stays.
std::string PercentDecode(const std::string& text, bool plus_is_space);

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_HTTP_HTTP_WIRE_H_
