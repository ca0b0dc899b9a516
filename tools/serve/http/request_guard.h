// Copyright delayq authors.
//
// What a web browser could smuggle into `delayq serve`. A server on
// loopback without a token answers any process of the machine, and so any
// web page its user opens: the page cannot read the replies of another
// origin, but it can send requests, and with DNS rebinding (a name of the
// attacker's that first resolves to the attacker, then to 127.0.0.1) it
// can read them too. The guard refuses, before any route runs:
//
// - a Host header that names no address of this server (DNS rebinding),
//   unless the server requires a token (a rebound page does not have it);
// - an Origin header of another origin than the one the request is sent
//   to, or a Sec-Fetch-Site header that says the request came from another
//   site: a page cannot forge either;
// - a request that may change something (not GET or HEAD) whose body is
//   not declared application/json: a page can send text/plain, a form or
//   no body at all without asking the server first, but not JSON (which
//   a browser only sends after a CORS preflight, which this server never
//   grants).
//
// Clients that are not browsers send none of the headers a browser adds
// (or the right ones), and are not affected.

#ifndef DELAYQ_TOOLS_SERVE_HTTP_REQUEST_GUARD_H_
#define DELAYQ_TOOLS_SERVE_HTTP_REQUEST_GUARD_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "tools/serve/http/http_message.h"

namespace delayq {
namespace serve {

class RequestGuard {
 public:
  // `listen_host`: the address the server listens on. `more_hosts`: other
  // names clients may reach it by (a proxy's, a DNS name). With
  // `check_host` false (a token is required) any Host is taken.
  RequestGuard(absl::string_view listen_host,
               const std::vector<std::string>& more_hosts, bool check_host);

  // True when `request` may go on to the routes; false with `refusal`
  // written (403 PERMISSION_DENIED, or 415 for a body that is not JSON).
  bool Admit(const HttpRequest& request, HttpResponse& refusal) const;

  // The header lines every reply carries (the transport's refusals too):
  // no content sniffing, no framing by other pages, the dashboard's
  // scripts and styles from this server only, no referrer.
  static std::vector<std::string> SecurityHeaders();

 private:
  // Whether `authority` ("name", "name:port", "[v6]:port") names a host
  // this server may be reached by.
  bool KnownHost(absl::string_view authority) const;

  // Whether the request's Origin is the origin it is sent to (its Host).
  // Only that: a name the server answers to may be served on other ports
  // and schemes by pages that are not the server's.
  static bool SameOrigin(const HttpRequest& request);

  std::vector<std::string> hosts_;  // lowercase, without brackets or port
  bool check_host_;
};

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_HTTP_REQUEST_GUARD_H_
