// Copyright delayq authors.

#include "tools/serve/router.h"

#include <exception>
#include <utility>

#include "tools/serve/auth.h"
#include "tools/serve/http_status.h"

namespace delayq {
namespace serve {

std::string Call::Query(const std::string& name) const {
  return request->has_param(name.c_str())
             ? request->get_param_value(name.c_str())
             : "";
}

bool Router::Authorized(const httplib::Request& req,
                        httplib::Response& res) const {
  if (token_.empty()) return true;
  absl::Status s = CheckBearer(req.get_header_value("Authorization"), token_);
  if (s.ok()) return true;
  WriteError(res, s);
  res.set_header("WWW-Authenticate", "Bearer");
  return false;
}

httplib::Server::Handler Router::Wrap(Route route, bool has_body) {
  return [this, route = std::move(route), has_body](const httplib::Request& req,
                                                    httplib::Response& res) {
    if (!Authorized(req, res)) return;
    Call call;
    call.request = &req;
    for (size_t i = 1; i < req.matches.size(); ++i) {
      call.path.push_back(req.matches[i].str());
    }
    if (has_body) {
      absl::StatusOr<Json> body = ParseBody(req.body);
      if (!body.ok()) return WriteError(res, body.status());
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
    if (!reply.ok()) return WriteError(res, reply.status());
    if (!reply->text.empty()) {
      res.status = reply->status;
      res.set_content(reply->text, "application/json");
      return;
    }
    WriteJson(res, reply->status, reply->body);
  };
}

void Router::Get(const std::string& pattern, Route route) {
  server_.Get(pattern, Wrap(std::move(route), false));
}

void Router::Post(const std::string& pattern, Route route) {
  server_.Post(pattern, Wrap(std::move(route), true));
}

void Router::PostBulk(const std::string& pattern, Route route) {
  server_.Post(pattern, Wrap(std::move(route), false));
}

void Router::Put(const std::string& pattern, Route route) {
  server_.Put(pattern, Wrap(std::move(route), true));
}

void Router::GetText(const std::string& pattern,
                     std::function<std::string()> text,
                     const std::string& content_type) {
  server_.Get(pattern,
              [this, text = std::move(text), content_type](
                  const httplib::Request& req, httplib::Response& res) {
                if (Authorized(req, res))
                  res.set_content(text(), content_type.c_str());
              });
}

void Router::Delete(const std::string& pattern, Route route) {
  server_.Delete(pattern, Wrap(std::move(route), false));
}

}  // namespace serve
}  // namespace delayq
