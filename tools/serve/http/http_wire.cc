// Copyright delayq authors.

#include "tools/serve/http/http_wire.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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
constexpr absl::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

HttpConnection::Outcome Refusal(int status, std::string message) {
  HttpConnection::Outcome outcome;
  outcome.kind = HttpConnection::Outcome::kRefused;
  outcome.status = status;
  outcome.message = std::move(message);
  outcome.keep_alive = false;
  return outcome;
}

HttpConnection::Outcome ParseRefusal(const boost::system::error_code& error,
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

absl::string_view View(boost::beast::string_view text) {
  return absl::string_view(text.data(), text.size());
}

bool AsksToContinue(const Parser& parser) {
  return absl::EqualsIgnoreCase(View(parser.get()[http::field::expect]),
                                "100-continue");
}

// The header fields the request keeps, read once the header is in (so
// that no trailer after the body can stand in for one).
void TakeHeaders(const Parser& parser, HttpRequest* request) {
  const http::request<http::string_body>& message = parser.get();
  request->authorization =
      std::string(View(message[http::field::authorization]));
  request->host = std::string(View(message[http::field::host]));
  request->origin = std::string(View(message[http::field::origin]));
  request->content_type = std::string(View(message[http::field::content_type]));
  request->fetch_site = std::string(View(message["Sec-Fetch-Site"]));
}

size_t FieldCount(const Parser& parser) {
  return static_cast<size_t>(
      std::distance(parser.get().begin(), parser.get().end()));
}

// The refusal of a request's header, if it cannot be taken: HTTP/1.1
// without a Host (RFC 9112, 3.2), a transfer coding other than chunked (a
// body sent "gzip, chunked" would be read as plain). A request with neither
// a Content-Length nor chunks has no body (RFC 9112, 6.3): a POST that
// needs no fields may be sent so.
std::optional<HttpConnection::Outcome> HeaderRefusal(const Parser& parser) {
  const http::request<http::string_body>& message = parser.get();
  if (message.version() >= 11 &&
      message.find(http::field::host) == message.end()) {
    return Refusal(400, "malformed HTTP request: HTTP/1.1 needs a Host header");
  }
  const auto coding = message.find(http::field::transfer_encoding);
  if (coding != message.end() &&
      !absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(View(coding->value())),
                              "chunked")) {
    return Refusal(400,
                   "malformed HTTP request: of the transfer codings, only "
                   "'chunked' is understood");
  }
  return std::nullopt;
}

// Fills the request's method, path and query from the parsed message, and
// takes its body.
void Fill(Parser& parser, HttpRequest* request) {
  http::request<http::string_body>& message = parser.get();
  request->method = std::string(message.method_string());
  const std::string target(message.target());
  const size_t question = target.find('?');
  request->path = target.substr(0, question);
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
  request->body = std::move(message.body());
}

// The status line's reason phrase.
absl::string_view Reason(int status) {
  const absl::string_view reason =
      View(http::obsolete_reason(http::int_to_status(status)));
  if (reason.empty() || reason.front() == '<') return "Unknown";  // not IANA's
  return reason;
}

using Clock = HttpConnection::Clock;

Clock::time_point After(absl::Duration duration) {
  return Clock::now() + absl::ToChronoNanoseconds(duration);
}

absl::Duration Until(Clock::time_point deadline) {
  return absl::FromChrono(deadline - Clock::now());
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A parser that stops after the header, so that it is checked and its
// fields taken before any byte of the body (or a trailer) is parsed.
void Configure(Parser& parser, size_t max_body_bytes) {
  parser.eager(false);
  parser.header_limit(kMaxHeaderBytes);
  parser.body_limit(max_body_bytes);
  // A chunk's extensions are bounded as a header line is (the parser
  // bounds neither).
  auto bound_extensions = [](uint64_t, boost::beast::string_view extensions,
                             boost::beast::error_code& error) {
    if (extensions.size() > kMaxHeaderBytes) {
      error = http::error::bad_chunk_extension;
    }
  };
  parser.on_chunk_header(bound_extensions);
}

}  // namespace

HttpConnection::HttpConnection(int fd, const Limits& limits)
    : fd_(fd), limits_(limits) {
  SetTimeout(SO_SNDTIMEO, limits_.reply, &send_timeout_);
}

HttpConnection::~HttpConnection() { close(fd_); }

void HttpConnection::SetTimeout(int option, absl::Duration timeout,
                                absl::Duration* current) {
  // Below a millisecond the socket would read 0 as "no timeout".
  timeout = std::max(timeout, absl::Milliseconds(1));
  if (timeout == *current) return;
  const timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd_, SOL_SOCKET, option, &tv, sizeof(tv));
  *current = timeout;
}

bool HttpConnection::AwaitRequest() {
  // Empty lines do not make a connection any less idle: the whole wait,
  // however many of them come, is bounded.
  const Clock::time_point deadline = After(limits_.idle);
  size_t skipped = 0;
  for (;;) {
    // Counted alike whether they come alone or with the request after them.
    const size_t start = buffer_.find_first_not_of("\r\n");
    skipped += start == std::string::npos ? buffer_.size() : start;
    if (skipped > kMaxHeaderBytes) return false;
    if (start != std::string::npos) {
      buffer_.erase(0, start);
      return true;
    }
    buffer_.clear();
    const absl::Duration left = Until(deadline);
    if (left <= absl::ZeroDuration() || !Receive(left)) return false;
  }
}

bool HttpConnection::Receive(absl::Duration timeout) {
  SetTimeout(SO_RCVTIMEO, timeout, &receive_timeout_);
  char chunk[kReceiveBytes];
  ssize_t got;
  do {
    got = recv(fd_, chunk, sizeof(chunk), 0);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) return false;
  buffer_.append(chunk, static_cast<size_t>(got));
  return true;
}

bool HttpConnection::HasUnread() {
  char byte;
  return !buffer_.empty() || recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

bool HttpConnection::ClientGone() {
  if (!buffer_.empty()) return false;
  char byte;
  const ssize_t got = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return got == 0 ||
         (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

HttpConnection::Outcome HttpConnection::Read(HttpRequest* request) {
  const Clock::time_point deadline = After(limits_.request);
  std::optional<Parser> parser;
  bool header_checked = false;
  size_t header_fields = 0;
  for (;;) {
    if (!buffer_.empty() && !header_checked) {
      // Until the header is in, a fresh parser reads all of it each time
      // more arrives. A parser that has answered need_more looks again
      // only once the header's end is in, so a malformed line that came in
      // pieces would wait for the deadline instead of being refused as it
      // is when it comes at once. The header is at most kMaxHeaderBytes.
      parser.emplace();
      Configure(*parser, limits_.max_body_bytes);
      boost::beast::error_code error;
      const size_t used = parser->put(
          boost::asio::buffer(buffer_.data(), buffer_.size()), error);
      if (error && error != http::error::need_more) {
        return ParseRefusal(error, limits_.max_body_bytes);
      }
      if (!parser->is_header_done()) {
        if (buffer_.size() > kMaxHeaderBytes) {
          return ParseRefusal(http::error::header_limit,
                              limits_.max_body_bytes);
        }
      } else {
        buffer_.erase(0, used);
        header_checked = true;
        if (std::optional<Outcome> refused = HeaderRefusal(*parser)) {
          return *std::move(refused);
        }
        // An HTTP/1.0 client's expectation is ignored (RFC 9110, 10.1.1).
        if (!parser->is_done() && parser->get().version() >= 11 &&
            AsksToContinue(*parser)) {
          iovec go{const_cast<char*>(kContinue.data()), kContinue.size()};
          if (!Send(&go, 1, deadline)) return Outcome{};  // kBroken
        }
        TakeHeaders(*parser, request);
        header_fields = FieldCount(*parser);
        parser->eager(true);
      }
    }
    if (!buffer_.empty() && header_checked && !parser->is_done()) {
      boost::beast::error_code error;
      const size_t used = parser->put(
          boost::asio::buffer(buffer_.data(), buffer_.size()), error);
      buffer_.erase(0, used);
      if (error && error != http::error::need_more) {
        return ParseRefusal(error, limits_.max_body_bytes);
      }
      // The parser takes all it can: what it leaves of an unfinished
      // request is an unfinished line. It does not bound a chunk's size
      // line or a trailer, so this does.
      if (!parser->is_done() && buffer_.size() > kMaxHeaderBytes) {
        return Refusal(400, absl::StrCat("a chunk's size line or a trailer "
                                         "is over ",
                                         kMaxHeaderBytes, " bytes"));
      }
    }
    if (header_checked && parser->is_done()) break;
    const absl::Duration left = Until(deadline);
    if (left <= absl::ZeroDuration() || !Receive(left)) {
      return Outcome{};  // kBroken
    }
  }
  // Trailer fields would be read as the header's: none are taken.
  if (FieldCount(*parser) != header_fields) {
    return Refusal(400, "malformed HTTP request: trailer fields are not taken");
  }
  Outcome outcome;
  outcome.kind = Outcome::kRequest;
  outcome.keep_alive = parser->get().keep_alive();
  outcome.head = parser->get().method() == http::verb::head;
  outcome.http_1_0 = parser->get().version() < 11;
  Fill(*parser, request);
  if (outcome.head) request->method = "GET";
  return outcome;
}

bool HttpConnection::Write(const HttpResponse& response,
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
  return Send(iov, iov[1].iov_len == 0 ? 1 : 2, After(limits_.reply));
}

bool HttpConnection::Send(iovec* iov, int count, Clock::time_point deadline) {
  bool ok = true;
  while (count > 0) {
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = count;
    const ssize_t sent = sendmsg(fd_, &message, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0) {  // broken, or the time ran out
      ok = false;
      break;
    }
    size_t left = static_cast<size_t>(sent);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count == 0) break;
    iov->iov_base = static_cast<char*>(iov->iov_base) + left;
    iov->iov_len -= left;
    // A partial write: the rest has only what is left of the time (each
    // write's timeout would otherwise start again).
    const absl::Duration left_time = Until(deadline);
    if (left_time <= absl::ZeroDuration()) {
      ok = false;
      break;
    }
    SetTimeout(SO_SNDTIMEO, left_time, &send_timeout_);
  }
  // The next reply starts with its whole time (one call, most replies).
  SetTimeout(SO_SNDTIMEO, limits_.reply, &send_timeout_);
  return ok;
}

void HttpConnection::Linger() {
  shutdown(fd_, SHUT_WR);
  const Clock::time_point end = After(absl::Seconds(1));
  size_t dropped = buffer_.size();
  buffer_.clear();
  while (dropped < (16 << 20) && Until(end) > absl::ZeroDuration() &&
         Receive(Until(end))) {
    dropped += buffer_.size();
    buffer_.clear();
  }
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
