// Copyright delayq authors.
//
// RequestMetrics — the HTTP requests `delayq serve` answered, for /metrics:
// how many per route, method and status, and how long they took per route
// (the router tells of each, see Router::SetObserver()).
//
// Thread-safe.

#ifndef DELAYQ_TOOLS_SERVE_REQUEST_METRICS_H_
#define DELAYQ_TOOLS_SERVE_REQUEST_METRICS_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "src/metrics/metrics_histogram.h"

namespace delayq {
namespace serve {

class RequestMetrics {
 public:
  void Observe(absl::string_view route, absl::string_view method, int status,
               absl::Duration took);

  // Appends delayq_http_requests_total{route,method,code} and the histogram
  // delayq_http_request_seconds{route} in the Prometheus text format.
  void Render(std::string* out) const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, int64_t> requests_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, internal::Histogram, std::less<>> seconds_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_REQUEST_METRICS_H_
