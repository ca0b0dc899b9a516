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

#ifndef DELAYQ_TOOLS_SERVE_HTTP_WIRE_H_
#define DELAYQ_TOOLS_SERVE_HTTP_WIRE_H_

#include <cstddef>
#include <string>

#include "absl/time/time.h"
#include "tools/serve/http_message.h"

namespace delayq {
namespace serve {

class RequestReader {
 public:
  struct Limits {
    size_t max_body_bytes = 2 << 20;  // larger bodies are refused (413)
    // The wait for a request's first byte: then the connection is idle.
    absl::Duration idle = absl::Seconds(5);
    // A request must be all in this long after its first byte, so that a
    // client cannot hold a connection (and a drain) by trickling bytes.
    absl::Duration request = absl::Seconds(30);
  };

  // Reads from `fd`, which it does not own, setting its receive timeout.
  RequestReader(int fd, const Limits& limits) : fd_(fd), limits_(limits) {}

  // Waits until the next request's first bytes are in (or already were).
  // False when the connection ended first: closed by the client, idle too
  // long, or shut down.
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

  // Whether the client has sent bytes not read yet (a next request).
  bool HasUnread();

 private:
  // Appends what the socket has, waiting at most `timeout` for a byte;
  // false when the connection ended or nothing came.
  bool Receive(absl::Duration timeout);

  const int fd_;
  const Limits limits_;
  absl::Duration timeout_ = absl::ZeroDuration();  // the socket's, as set
  std::string buffer_;  // received, not yet parsed: the next request's start
};

// How a reply goes out.
struct Framing {
  bool head = false;   // headers only (the reply to a HEAD)
  bool close = false;  // "Connection: close"; the server closes after it
  // "Connection: keep-alive", which an HTTP/1.0 client needs to hear.
  bool keep_alive_header = false;
};

// Writes `response`; false when the connection broke.
bool WriteResponse(int fd, const HttpResponse& response,
                   const Framing& framing);

// `text` with %XX sequences decoded, and '+' read as a space when
// `plus_is_space` (a query). A '%' not followed by two hex digits stays.
std::string PercentDecode(const std::string& text, bool plus_is_space);

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_HTTP_WIRE_H_
