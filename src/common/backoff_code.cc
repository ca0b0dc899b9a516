// Copyright delayq authors.

#include "src/common/backoff_code.h"

#include <algorithm>
#include <cmath>

namespace delayq {
namespace internal {
namespace {
constexpr double kJitterUnits = 1e6;
}  // namespace

int64_t BackoffCode(const Backoff& backoff) {
  const int64_t kind = backoff.kind == Backoff::Kind::kFixed ? 0 : 1;
  const double jitter = std::clamp(backoff.jitter, 0.0, 1.0);
  return kind + 2 * static_cast<int64_t>(std::llround(jitter * kJitterUnits));
}

Backoff BackoffFromCode(int64_t code, absl::Duration base, absl::Duration max) {
  Backoff b =
      (code & 1) == 0 ? Backoff::Fixed(base) : Backoff::Exponential(base, max);
  b.jitter = static_cast<double>(std::max<int64_t>(code, 0) / 2) / kJitterUnits;
  return b;
}

}  // namespace internal
}  // namespace delayq
