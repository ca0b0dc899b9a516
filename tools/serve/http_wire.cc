// Copyright delayq authors.

#include "tools/serve/http_wire.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "boost/beast/http/parser.hpp"
#include "boost/beast/http/status.hpp"
#include "boost/beast/http/string_body.hpp"

namespace delayq {
namespace serve {
namespace {

namespace http = boost::beast::http;
using Parser = http::request_parser<http::string_body>;

// The request line and headers together, as cpp-httplib allowed.
constexpr size_t kMaxHeaderBytes = 8192;
// What one recv() asks for.
constexpr size_t kReceiveBytes = 32 << 10;

RequestReader::Outcome Refusal(int status, std::string message) {
  RequestReader::Outcome outcome;
  outcome.kind = RequestReader::Outcome::kRefused;
  outcome.status = status;
  outcome.message = std::move(message);
  outcome.keep_alive = false;
  return outcome;
}

RequestReader::Outcome ParseRefusal(const boost::system::error_code& error,
                                    size_t max_body_bytes) {
  if (error == http::error::body_limit) {
    return Refusal(413, absl::StrCat("the request body is over ",
                                     max_body_bytes, " bytes"));
  }
  if (error == http::error::header_limit) {
    return Refusal(431, absl::StrCat("the request's line and headers are over ",
                                     kMaxHeaderBytes, " bytes"));
  }
  return Refusal(400,
                 absl::StrCat("malformed HTTP request: ", error.message()));
}

// A POST or PUT says how long its body is (or sends it in chunks): without
// either, HTTP reads it as having none, which is never what was meant.
bool LacksBodyLength(const Parser& parser) {
  const http::verb verb = parser.get().method();
  return (verb == http::verb::post || verb == http::verb::put) &&
         !parser.content_length().has_value() && !parser.chunked();
}

bool AsksToContinue(const Parser& parser) {
  return absl::EqualsIgnoreCase(
      absl::string_view(parser.get()[http::field::expect].data(),
                        parser.get()[http::field::expect].size()),
      "100-continue");
}

// Fills the request's method, path, query and authorization from the
// parsed message, and takes its body.
void Fill(Parser& parser, HttpRequest* request) {
  http::request<http::string_body>& message = parser.get();
  request->method = std::string(message.method_string());
  const std::string target(message.target());
  const size_t question = target.find('?');
  request->path = PercentDecode(target.substr(0, question), false);
  request->query.clear();
  if (question != std::string::npos) {
    for (absl::string_view part :
         absl::StrSplit(absl::string_view(target).substr(question + 1), '&',
                        absl::SkipEmpty())) {
      std::pair<std::string, std::string> kv =
          absl::StrSplit(part, absl::MaxSplits('=', 1));
      request->query.emplace_back(PercentDecode(kv.first, true),
                                  PercentDecode(kv.second, true));
    }
  }
  const auto authorization = message[http::field::authorization];
  request->authorization.assign(authorization.data(), authorization.size());
  request->body = std::move(message.body());
}

bool SendAll(int fd, iovec* iov, int count) {
  while (count > 0) {
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = count;
    const ssize_t sent = sendmsg(fd, &message, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return false;  // broken, or the write timeout passed
    }
    size_t left = static_cast<size_t>(sent);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

// The status line's reason phrase.
absl::string_view Reason(int status) {
  const boost::beast::string_view reason =
      http::obsolete_reason(http::int_to_status(status));
  if (reason.empty() || reason.front() == '<') return "Unknown";  // not IANA's
  return absl::string_view(reason.data(), reason.size());
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool RequestReader::AwaitRequest() {
  return !buffer_.empty() || Receive(limits_.idle);
}

bool RequestReader::Receive(absl::Duration timeout) {
  // Below a millisecond the socket would read 0 as "no timeout".
  timeout = std::max(timeout, absl::Milliseconds(1));
  if (timeout != timeout_) {
    const timeval tv = absl::ToTimeval(timeout);
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    timeout_ = timeout;
  }
  char chunk[kReceiveBytes];
  ssize_t got;
  do {
    got = recv(fd_, chunk, sizeof(chunk), 0);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) return false;
  buffer_.append(chunk, static_cast<size_t>(got));
  return true;
}

bool RequestReader::HasUnread() {
  char byte;
  return !buffer_.empty() || recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

RequestReader::Outcome RequestReader::Read(HttpRequest* request) {
  const absl::Time deadline = absl::Now() + limits_.request;
  Parser parser;
  parser.eager(true);
  parser.header_limit(kMaxHeaderBytes);
  parser.body_limit(limits_.max_body_bytes);
  bool started = false, header_checked = false;
  for (;;) {
    // Empty lines before a request line are skipped (RFC 9112, 2.2).
    while (!started && !buffer_.empty() &&
           (buffer_[0] == '\r' || buffer_[0] == '\n')) {
      buffer_.erase(0, 1);
    }
    if (!buffer_.empty()) {
      started = true;
      boost::beast::error_code error;
      const size_t used = parser.put(
          boost::asio::buffer(buffer_.data(), buffer_.size()), error);
      buffer_.erase(0, used);
      if (error && error != http::error::need_more) {
        return ParseRefusal(error, limits_.max_body_bytes);
      }
      // What the parser leaves of an unfinished request is an unfinished
      // line (bodies are taken as they come). It does not bound a chunk's
      // size line or the trailers, so this does.
      if (!parser.is_done() &&
          buffer_.size() > kMaxHeaderBytes + kReceiveBytes) {
        return parser.is_header_done()
                   ? Refusal(400, absl::StrCat("a chunk's size line or a "
                                               "trailer is over ",
                                               kMaxHeaderBytes, " bytes"))
                   : ParseRefusal(http::error::header_limit,
                                  limits_.max_body_bytes);
      }
    }
    if (parser.is_header_done() && !header_checked) {
      header_checked = true;
      if (LacksBodyLength(parser)) {
        return Refusal(400,
                       "malformed HTTP request (a POST needs a Content-Length; "
                       "send {} for no fields)");
      }
      // An HTTP/1.0 client's expectation is ignored (RFC 9110, 10.1.1).
      if (!parser.is_done() && parser.get().version() >= 11 &&
          AsksToContinue(parser)) {
        iovec go{const_cast<char*>("HTTP/1.1 100 Continue\r\n\r\n"), 25};
        if (!SendAll(fd_, &go, 1)) return Outcome{};
      }
    }
    if (parser.is_done()) break;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration() || !Receive(left)) {
      return Outcome{};  // kBroken
    }
  }
  Outcome outcome;
  outcome.kind = Outcome::kRequest;
  outcome.keep_alive = parser.get().keep_alive();
  outcome.head = parser.get().method() == http::verb::head;
  outcome.http_1_0 = parser.get().version() < 11;
  Fill(parser, request);
  if (outcome.head) request->method = "GET";
  return outcome;
}

bool WriteResponse(int fd, const HttpResponse& response,
                   const Framing& framing) {
  std::string lines =
      absl::StrCat("HTTP/1.1 ", response.status, " ", Reason(response.status),
                   "\r\nContent-Type: ", response.content_type,
                   "\r\nContent-Length: ", response.body.size(), "\r\n");
  for (const std::string& header : response.headers) {
    absl::StrAppend(&lines, header, "\r\n");
  }
  if (framing.close) {
    lines += "Connection: close\r\n";
  } else if (framing.keep_alive_header) {
    lines += "Connection: keep-alive\r\n";
  }
  lines += "\r\n";
  iovec iov[2] = {{lines.data(), lines.size()},
                  {const_cast<char*>(response.body.data()),
                   framing.head ? 0 : response.body.size()}};
  return SendAll(fd, iov, iov[1].iov_len == 0 ? 1 : 2);
}

std::string PercentDecode(const std::string& text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size() && HexDigit(text[i + 1]) >= 0 &&
        HexDigit(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexDigit(text[i + 1]) * 16 +
                                      HexDigit(text[i + 2])));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace serve
}  // namespace delayq
