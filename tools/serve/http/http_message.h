// Copyright delayq authors.
//
// An HTTP request as the routes see it, and the reply they fill in. The
// transport (http_server.h) reads the one and writes the other; nothing
// else here knows how they travel.

#ifndef DELAYQ_TOOLS_SERVE_HTTP_HTTP_MESSAGE_H_
#define DELAYQ_TOOLS_SERVE_HTTP_HTTP_MESSAGE_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace delayq {
namespace serve {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...; a HEAD is routed as its GET
  // As sent, without the query: still percent-encoded, so that an encoded
  // '/' ("%2F") stays inside its segment when routes are matched (the
  // router decodes each captured part).
  std::string path;
  // The query's parameters in order, percent-decoded ('+' is a space).
  std::vector<std::pair<std::string, std::string>> query;
  // Headers, "" when absent.
  std::string authorization;
  std::string host;
  std::string origin;
  std::string content_type;
  std::string fetch_site;  // Sec-Fetch-Site, which browsers send
  std::string body;
  // Whether the client has closed its connection while the request was
  // being answered (a long poll asks before it hands out work). Null for
  // a request that came from no connection.
  std::function<bool()> client_gone;

  // The first value of query parameter `name`, or "" when absent.
  std::string Query(absl::string_view name) const {
    for (const auto& [key, value] : query) {
      if (key == name) return value;
    }
    return "";
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // More header lines, "Name: value" without the line's end.
  std::vector<std::string> headers;
};

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_HTTP_HTTP_MESSAGE_H_
