// Copyright delayq authors.
//
// A Prometheus histogram with fixed bucket bounds, and the text it renders
// to. Not thread-safe: Metrics guards its histograms with its own lock.

#ifndef DELAYQ_SRC_METRICS_METRICS_HISTOGRAM_H_
#define DELAYQ_SRC_METRICS_METRICS_HISTOGRAM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace delayq {
namespace internal {

class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, ascending; +Inf is added.
  explicit Histogram(std::vector<double> bounds);

  void Observe(double value);

  // Appends NAME_bucket{LABELS,le="..."}, NAME_sum and NAME_count lines.
  // `labels` is "" or `a="x",b="y"`.
  void Render(absl::string_view name, absl::string_view labels,
              std::string* out) const;

  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> buckets_;  // not cumulative; summed when rendered
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Seconds from 0.5 ms to 60 s: delivery lateness and handler run time.
std::vector<double> JobSecondsBounds();
// Seconds from 50 us to 5 s: store calls.
std::vector<double> StoreCallSecondsBounds();

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_METRICS_METRICS_HISTOGRAM_H_
