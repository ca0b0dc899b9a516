// Copyright delayq authors.

#include "src/metrics/metrics_histogram.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace delayq {
namespace internal {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  const size_t i =
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++buckets_[i];
  sum_ += value;
  ++count_;
}

void Histogram::Render(absl::string_view name, absl::string_view labels,
                       std::string* out) const {
  const std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += buckets_[i];
    const std::string le =
        i < bounds_.size() ? absl::StrCat(bounds_[i]) : "+Inf";
    absl::StrAppend(out, name, "_bucket{", labels, sep, "le=\"", le, "\"} ",
                    cumulative, "\n");
  }
  const std::string braces =
      labels.empty() ? "" : absl::StrCat("{", labels, "}");
  absl::StrAppend(out, name, "_sum", braces, " ", sum_, "\n");
  absl::StrAppend(out, name, "_count", braces, " ", count_, "\n");
}

std::vector<double> JobSecondsBounds() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,   0.5,   1,      2.5,   5,    10,    30,   60};
}

std::vector<double> StoreCallSecondsBounds() {
  return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
          0.01,    0.025,  0.05,    0.1,    0.5,   1,      5};
}

}  // namespace internal
}  // namespace delayq
