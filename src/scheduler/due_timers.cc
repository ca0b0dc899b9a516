// Copyright delayq authors.

#include "src/scheduler/due_timers.h"

namespace delayq {
namespace internal {

DueTimers::DueTimers(absl::Time origin, absl::Duration tick)
    : ticks_(origin, tick), wheel_(0) {
  at_.fill(absl::InfiniteFuture());
}

void DueTimers::Arm(absl::Time at) { ArmAt(kLocal, at, /*earliest=*/true); }

void DueTimers::ArmPoll(absl::Time at) { ArmAt(kPoll, at, /*earliest=*/false); }

void DueTimers::ArmNews(absl::Time at) { ArmAt(kNews, at, /*earliest=*/true); }

void DueTimers::ArmAt(Kind kind, absl::Time at, bool earliest) {
  if (earliest && at >= at_[kind]) return;
  wheel_.Cancel(timer_[kind]);
  timer_[kind] = TimerId();
  at_[kind] = at;
  if (at == absl::InfiniteFuture()) return;
  timer_[kind] = wheel_.Insert(ticks_.CeilTicks(at), kind);
}

size_t DueTimers::Advance(absl::Time now) {
  return wheel_.Advance(ticks_.FloorTicks(now), [&](Kind&& kind) {
    timer_[kind] = TimerId();
    at_[kind] = absl::InfiniteFuture();
  });
}

absl::Time DueTimers::NextWake() const {
  std::optional<uint64_t> next = wheel_.NextExpiration();
  return next ? ticks_.TimeOf(*next) : absl::InfiniteFuture();
}

}  // namespace internal
}  // namespace delayq
