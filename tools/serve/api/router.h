// Copyright delayq authors.
//
// The server's routes, by method and path pattern (path_pattern.h: text
// with "([^/]+)" and "(.+)" captures), tried in the order they were added. A
// JSON route's handler gets the request, its path's captured parts and its
// parsed JSON body, and returns a reply or an error status; the router
// writes either as JSON. New routes are one call each:
//
//   router.Post(R"(/v1/jobs/([^/]+)/ack)", [&](const Call& call) { ... });

#ifndef DELAYQ_TOOLS_SERVE_API_ROUTER_H_
#define DELAYQ_TOOLS_SERVE_API_ROUTER_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tools/serve/api/json_codec.h"
#include "tools/serve/api/path_pattern.h"
#include "tools/serve/http/http_message.h"

namespace delayq {
namespace serve {

// One request, as a route's handler sees it.
struct Call {
  const HttpRequest* request = nullptr;
  // The pattern's captured parts, each percent-decoded on its own.
  std::vector<std::string> path;
  Json body;  // {} for a request without a body, or one read as text

  // A query parameter, or "" when absent.
  std::string Query(const std::string& name) const {
    return request->Query(name);
  }
};

struct Reply {
  Reply() = default;
  Reply(int status, Json body) : status(status), body(std::move(body)) {}
  // A reply whose body is JSON the route wrote itself.
  static Reply Text(int status, std::string text) {
    Reply reply;
    reply.status = status;
    reply.text = std::move(text);
    return reply;
  }

  int status = 200;
  Json body = Json::object();
  std::string text;  // when not empty, the body as is
};

using Route = std::function<absl::StatusOr<Reply>(const Call&)>;

// The query parameters a route reads; any other is refused (400) before the
// route runs, as an unknown field of a body is.
using QueryNames = std::vector<std::string>;

// Every route the router adds checks the bearer token first, when there is
// one (after the body is read, so a refused request leaves the kept-alive
// connection usable).
class Router {
 public:
  explicit Router(std::string token) : token_(std::move(token)) {}

  void Get(const std::string& pattern, Route route, QueryNames query = {});
  // A POST without a body is one with no fields ({}).
  void Post(const std::string& pattern, Route route, QueryNames query = {});
  // A POST that acts on what its path names and takes no fields (retry,
  // promote, pause, close): a body with any field is refused (400) before
  // the route runs, as another route refuses an unknown field, so that a
  // client that means an option the route does not have learns it.
  void PostAction(const std::string& pattern, Route route);
  // A POST whose route reads the body's text itself (ack_list.h), so
  // Call::body is left {}.
  void PostBulk(const std::string& pattern, Route route);
  void Put(const std::string& pattern, Route route);
  void Delete(const std::string& pattern, Route route);

  // A GET whose reply is text made by `text` (metrics, documents).
  void GetText(const std::string& pattern, std::function<std::string()> text,
               const std::string& content_type);

  // A GET answered with `content` as it is, with no token asked (the
  // dashboard's files: the page asks for the token itself).
  void GetFile(const std::string& pattern, std::string content,
               const std::string& content_type);

  // Answers `request` with the first route that matches its method and
  // path; 405 (with Allow) when only other methods' routes match the path;
  // 404 otherwise.
  void Handle(const HttpRequest& request, HttpResponse& response) const;

  // Told of every request Handle() answered: its route (the pattern, each
  // capture written "{}"; "unmatched" when none matched), its method, the
  // reply's status and how long the answer took. Set before serving.
  using Observer =
      std::function<void(absl::string_view route, absl::string_view method,
                         int status, absl::Duration took)>;
  void SetObserver(Observer observer) { observer_ = std::move(observer); }

 private:
  // Gets the request, what the pattern's captures matched, the reply.
  using Handler = std::function<void(
      const HttpRequest&, std::vector<std::string>&& path, HttpResponse&)>;
  struct Entry {
    std::string method;
    PathPattern pattern;
    std::string label;  // the pattern as Observer names it
    Handler handler;
  };

  void Add(const std::string& method, const std::string& pattern,
           Handler handler);
  Handler Wrap(Route route, bool has_body, QueryNames query = {}) const;
  // The reply when no route has the request's method and path.
  void WriteUnrouted(const HttpRequest& request, HttpResponse& response) const;
  // False (with the error written) when the request lacks the token.
  bool Authorized(const HttpRequest& request, HttpResponse& response) const;

  const std::string token_;
  std::vector<Entry> routes_;
  Observer observer_;
};

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_API_ROUTER_H_
