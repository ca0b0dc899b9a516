// Copyright delayq authors.

#include "tools/serve/http/request_guard.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "tools/serve/http/error_reply.h"

namespace delayq {
namespace serve {
namespace {

// The host of an authority, lowercase, without brackets, port or a final
// dot ("[::1]:7070" -> "::1", "LocalHost.:80" -> "localhost").
std::string HostOf(absl::string_view authority) {
  absl::string_view host = authority;
  if (absl::ConsumePrefix(&host, "[")) {
    host = host.substr(0, host.find(']'));
  } else {
    host = host.substr(0, host.find(':'));
  }
  absl::ConsumeSuffix(&host, ".");
  return absl::AsciiStrToLower(host);
}

// The media type of a Content-Type value, lowercase, without parameters.
std::string MediaType(absl::string_view content_type) {
  return absl::AsciiStrToLower(absl::StripAsciiWhitespace(
      content_type.substr(0, content_type.find(';'))));
}

}  // namespace

RequestGuard::RequestGuard(absl::string_view listen_host,
                           const std::vector<std::string>& more_hosts,
                           bool check_host)
    : check_host_(check_host) {
  // A listen host is written without brackets, even an IPv6 one.
  hosts_ = {"localhost", "127.0.0.1", "::1",
            absl::AsciiStrToLower(listen_host)};
  for (const std::string& host : more_hosts) hosts_.push_back(HostOf(host));
}

bool RequestGuard::KnownHost(absl::string_view authority) const {
  const std::string host = HostOf(authority);
  return !host.empty() &&
         std::find(hosts_.begin(), hosts_.end(), host) != hosts_.end();
}

bool RequestGuard::SameOrigin(const HttpRequest& request) {
  absl::string_view origin = request.origin;
  // "null" (a sandboxed frame, a file) is no web origin. A proxy in front
  // must pass the Host the browser sent, so that the two still agree.
  return (absl::ConsumePrefix(&origin, "http://") ||
          absl::ConsumePrefix(&origin, "https://")) &&
         !request.host.empty() && absl::EqualsIgnoreCase(origin, request.host);
}

bool RequestGuard::Admit(const HttpRequest& request,
                         HttpResponse& refusal) const {
  // HTTP/1.0 clients may send no Host; browsers always send one.
  if (check_host_ && !request.host.empty() && !KnownHost(request.host)) {
    WriteRefusal(refusal, 403,
                 absl::StrCat("Host '", request.host,
                              "' is not a name of this server; start it with "
                              "--allow-host NAME to be reached by that name"));
    return false;
  }
  if (!request.origin.empty() && !SameOrigin(request)) {
    WriteRefusal(refusal, 403,
                 absl::StrCat("requests from the web page of another origin ('",
                              request.origin, "') are refused"));
    return false;
  }
  if (request.fetch_site == "cross-site" || request.fetch_site == "same-site") {
    WriteRefusal(refusal, 403,
                 "requests from the web page of another site are refused");
    return false;
  }
  if (request.method != "GET" && request.method != "HEAD") {
    const std::string type = MediaType(request.content_type);
    if (type.empty() ? !request.body.empty() : type != "application/json") {
      WriteRefusal(refusal, 415,
                   "a request body must be sent as 'Content-Type: "
                   "application/json'");
      return false;
    }
  }
  return true;
}

std::vector<std::string> RequestGuard::SecurityHeaders() {
  return {
      "X-Content-Type-Options: nosniff",
      "X-Frame-Options: DENY",
      "Content-Security-Policy: default-src 'self'; frame-ancestors 'none'; "
      "base-uri 'none'; form-action 'none'",
      "Referrer-Policy: no-referrer",
      "Cross-Origin-Resource-Policy: same-origin",
  };
}

}  // namespace serve
}  // namespace delayq
