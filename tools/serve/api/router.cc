// Copyright delayq authors.

#include "tools/serve/api/router.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "tools/common/text.h"
#include "tools/serve/api/auth.h"
#include "tools/serve/http/error_reply.h"
#include "tools/serve/http/http_wire.h"

namespace delayq {
namespace serve {
namespace {

// A route's reply: `body` as JSON; text that is not UTF-8 is replaced.
void WriteJson(HttpResponse& response, int status, const Json& body) {
  response.status = status;
  response.content_type = "application/json";
  response.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// InvalidArgument naming the first query parameter not in `names`.
absl::Status OnlyQueryNames(const HttpRequest& request,
                            const QueryNames& names) {
  for (const auto& [name, value] : request.query) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown query parameter '", cli::Preview(name, 64), "'",
          names.empty()
              ? " (this route takes none)"
              : absl::StrCat(" (it takes ", absl::StrJoin(names, ", "), ")")));
    }
  }
  return absl::OkStatus();
}

}  // namespace

void Router::WriteUnrouted(const HttpRequest& request,
                           HttpResponse& response) const {
  std::vector<std::string> allowed;
  std::vector<std::string> unused;
  for (const Entry& route : routes_) {
    if (route.pattern.Match(request.path, &unused) &&
        std::find(allowed.begin(), allowed.end(), route.method) ==
            allowed.end()) {
      allowed.push_back(route.method);
    }
  }
  if (!allowed.empty()) {
    WriteRefusal(response, 405,
                 absl::StrCat(request.method, " is not a method of ",
                              cli::Preview(request.path, 200), " (it takes ",
                              absl::StrJoin(allowed, ", "), ")"));
    response.headers.push_back(
        absl::StrCat("Allow: ", absl::StrJoin(allowed, ", ")));
    return;
  }
  // Ids and names are one path segment each: a '/' in one is sent as %2F,
  // so that "/v1/jobs/a/history" can only mean the history of job "a".
  WriteError(response, absl::NotFoundError(absl::StrCat(
                           "no route ", request.method, " ",
                           cli::Preview(request.path, 200),
                           " (an id or name that holds '/' goes in the path "
                           "as %2F)")));
}

void Router::Handle(const HttpRequest& request, HttpResponse& response) const {
  const absl::Time start = absl::Now();
  absl::string_view label = "unmatched";
  std::vector<std::string> path;
  const Entry* matched = nullptr;
  for (const Entry& route : routes_) {
    if (route.method == request.method &&
        route.pattern.Match(request.path, &path)) {
      matched = &route;
      break;
    }
  }
  if (matched != nullptr) {
    label = matched->label;
    for (std::string& part : path) part = PercentDecode(part, false);
    matched->handler(request, std::move(path), response);
  } else {
    WriteUnrouted(request, response);
  }
  if (observer_) {
    observer_(label, request.method, response.status, absl::Now() - start);
  }
}

void Router::Add(const std::string& method, const std::string& pattern,
                 Handler handler) {
  std::string label =
      absl::StrReplaceAll(pattern, {{"([^/]+)", "{}"}, {"(.+)", "{}"}});
  routes_.push_back(Entry{method, PathPattern(pattern), std::move(label),
                          std::move(handler)});
}

bool Router::Authorized(const HttpRequest& request,
                        HttpResponse& response) const {
  if (token_.empty()) return true;
  absl::Status s = CheckBearer(request.authorization, token_);
  if (s.ok()) return true;
  WriteError(response, s);
  response.headers.push_back("WWW-Authenticate: Bearer");
  return false;
}

Router::Handler Router::Wrap(Route route, bool has_body,
                             QueryNames query) const {
  return [this, route = std::move(route), has_body, query = std::move(query)](
             const HttpRequest& request, std::vector<std::string>&& path,
             HttpResponse& response) {
    if (!Authorized(request, response)) return;
    if (absl::Status s = OnlyQueryNames(request, query); !s.ok()) {
      return WriteError(response, s);
    }
    Call call;
    call.request = &request;
    call.path = std::move(path);
    if (has_body) {
      absl::StatusOr<Json> body = ParseBody(request.body);
      if (!body.ok()) return WriteError(response, body.status());
      call.body = *std::move(body);
    } else {
      call.body = Json::object();
    }
    absl::StatusOr<Reply> reply;
    try {
      reply = route(call);
    } catch (const std::exception& e) {
      // A JSON value of an unexpected type deep in a handler; say so
      // rather than drop the connection.
      reply = absl::InvalidArgumentError(e.what());
    }
    if (!reply.ok()) return WriteError(response, reply.status());
    if (!reply->text.empty()) {
      response.status = reply->status;
      response.body = std::move(reply->text);
      return;
    }
    WriteJson(response, reply->status, reply->body);
  };
}

void Router::Get(const std::string& pattern, Route route, QueryNames query) {
  Add("GET", pattern, Wrap(std::move(route), false, std::move(query)));
}

void Router::Post(const std::string& pattern, Route route, QueryNames query) {
  Add("POST", pattern, Wrap(std::move(route), true, std::move(query)));
}

void Router::PostAction(const std::string& pattern, Route route) {
  Post(pattern,
       [route = std::move(route)](const Call& call) -> absl::StatusOr<Reply> {
         if (absl::Status s = OnlyFields(call.body, {}); !s.ok()) return s;
         return route(call);
       });
}

void Router::PostBulk(const std::string& pattern, Route route) {
  Add("POST", pattern, Wrap(std::move(route), false));
}

void Router::Put(const std::string& pattern, Route route) {
  Add("PUT", pattern, Wrap(std::move(route), true));
}

void Router::Delete(const std::string& pattern, Route route) {
  Add("DELETE", pattern, Wrap(std::move(route), false));
}

void Router::GetText(const std::string& pattern,
                     std::function<std::string()> text,
                     const std::string& content_type) {
  Add("GET", pattern,
      [this, text = std::move(text), content_type](const HttpRequest& request,
                                                   std::vector<std::string>&&,
                                                   HttpResponse& response) {
        if (!Authorized(request, response)) return;
        response.content_type = content_type;
        response.body = text();
      });
}

void Router::GetFile(const std::string& pattern, std::string content,
                     const std::string& content_type) {
  Add("GET", pattern,
      [content = std::move(content), content_type](const HttpRequest&,
                                                   std::vector<std::string>&&,
                                                   HttpResponse& response) {
        response.content_type = content_type;
        response.body = content;
        response.headers.push_back("Cache-Control: no-cache");
      });
}

}  // namespace serve
}  // namespace delayq
