// Copyright delayq authors.

#include "src/common/limit_gate.h"

#include <algorithm>

namespace delayq {
namespace internal {
namespace {

int64_t IntervalOf(const TopicLimit& limit) {
  if (limit.rate <= 0) return 0;
  const int64_t period = absl::ToInt64Microseconds(limit.period);
  return std::max<int64_t>(1, (period + limit.rate - 1) / limit.rate);
}

}  // namespace

LimitGate::LimitGate(const TopicLimit& limit, int64_t tat_us, int64_t now_us,
                     int64_t reserved)
    : limit_(limit),
      interval_us_(IntervalOf(limit)),
      tolerance_us_(IntervalOf(limit) *
                    (std::max<int64_t>(limit.burst, 1) - 1)),
      start_us_(tat_us == kFreshBucket ? now_us : std::max(tat_us, now_us)),
      now_us_(now_us),
      reserved_(reserved) {}

int64_t LimitGate::Allowed(int64_t max) const {
  int64_t allowed = max;
  if (limit_.concurrency > 0) {
    allowed =
        std::min(allowed, std::max<int64_t>(0, limit_.concurrency - reserved_));
  }
  if (interval_us_ > 0) {
    const int64_t slack = tolerance_us_ - (start_us_ - now_us_);
    allowed = std::min(allowed, slack < 0 ? 0 : slack / interval_us_ + 1);
  }
  return allowed;
}

int64_t LimitGate::TatAfter(int64_t taken) const {
  return start_us_ + taken * interval_us_;
}

int64_t LimitGate::NextAllowed(int64_t taken) const {
  if (limit_.concurrency > 0 && reserved_ + taken >= limit_.concurrency) {
    return kUntilReleased;
  }
  if (interval_us_ == 0) return now_us_;
  return std::max(now_us_, TatAfter(taken) - tolerance_us_);
}

}  // namespace internal
}  // namespace delayq
