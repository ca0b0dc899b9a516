// Copyright delayq authors.

#include "tools/serve/request_metrics.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace delayq {
namespace serve {

namespace {

// The method as a label: one of the methods routes take, or "other", so
// that a client sending made-up methods cannot grow the series.
absl::string_view MethodLabel(absl::string_view method) {
  for (absl::string_view known : {"GET", "HEAD", "POST", "PUT", "DELETE"}) {
    if (method == known) return known;
  }
  return "other";
}

}  // namespace

void RequestMetrics::Observe(absl::string_view route, absl::string_view method,
                             int status, absl::Duration took) {
  absl::MutexLock lock(&mu_);
  ++requests_[{std::string(route), std::string(MethodLabel(method)), status}];
  auto it = seconds_.find(route);
  if (it == seconds_.end()) {
    it =
        seconds_
            .try_emplace(std::string(route), internal::StoreCallSecondsBounds())
            .first;
  }
  it->second.Observe(absl::ToDoubleSeconds(took));
}

void RequestMetrics::Render(std::string* out) const {
  absl::MutexLock lock(&mu_);
  absl::StrAppend(out,
                  "# HELP delayq_http_requests_total HTTP requests answered, "
                  "per route, method and status code.\n"
                  "# TYPE delayq_http_requests_total counter\n");
  // Routes are delayq's own patterns and methods one of a few words: no
  // label here needs escaping.
  for (const auto& [key, n] : requests_) {
    const auto& [route, method, code] = key;
    absl::StrAppend(out, "delayq_http_requests_total{route=\"", route,
                    "\",method=\"", method, "\",code=\"", code, "\"} ", n,
                    "\n");
  }
  absl::StrAppend(out,
                  "# HELP delayq_http_request_seconds How long answering a "
                  "request took, per route (a reserve's wait included).\n"
                  "# TYPE delayq_http_request_seconds histogram\n");
  for (const auto& [route, h] : seconds_) {
    h.Render("delayq_http_request_seconds",
             absl::StrCat("route=\"", route, "\""), out);
  }
}

}  // namespace serve
}  // namespace delayq
