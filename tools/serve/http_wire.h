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

#include "tools/serve/http_message.h"

namespace delayq {
namespace serve {

class RequestReader {
 public:
  // Reads from `fd`, which it does not own. Bodies over `max_body_bytes`
  // are refused.
  RequestReader(int fd, size_t max_body_bytes)
      : fd_(fd), max_body_bytes_(max_body_bytes) {}

  // Waits until the next request's first bytes are in (or already were).
  // False when the connection ended first: closed by the client, timed out
  // (the socket's receive timeout), or shut down.
  bool AwaitRequest();

  struct Outcome {
    enum Kind {
      kRequest,  // *request is filled in
      kRefused,  // answer `status` with `message`, then close
      kBroken,   // the connection ended mid-request: close
    } kind = kBroken;
    int status = 0;
    std::string message;
    bool keep_alive = true;  // kRequest: the client keeps the connection
    bool head = false;       // kRequest: a HEAD (reply without the body)
  };
  // Reads the request whose first bytes AwaitRequest() saw. Answers
  // "Expect: 100-continue" itself.
  Outcome Read(HttpRequest* request);

 private:
  // Appends what the socket has (waiting for at least one byte); false when
  // it ended.
  bool Receive();

  const int fd_;
  const size_t max_body_bytes_;
  std::string buffer_;  // received, not yet parsed: the next request's start
};

// Writes `response` (its headers only when `head`); `close` adds
// "Connection: close". False when the connection broke.
bool WriteResponse(int fd, const HttpResponse& response, bool head, bool close);

// `text` with %XX sequences decoded, and '+' read as a space when
// `plus_is_space` (a query). A '%' not followed by two hex digits stays.
std::string PercentDecode(const std::string& text, bool plus_is_space);

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_HTTP_WIRE_H_
