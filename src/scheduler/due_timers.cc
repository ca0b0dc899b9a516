// Copyright delayq authors.

#include "src/scheduler/due_timers.h"

#include <algorithm>

namespace delayq {
namespace internal {

DueTimers::DueTimers(absl::Time origin, absl::Duration tick)
    : ticks_(origin, tick) {
  at_.fill(absl::InfiniteFuture());
}

void DueTimers::Arm(absl::Time at) { ArmAt(kLocal, at, /*earliest=*/true); }

void DueTimers::ArmPoll(absl::Time at) { ArmAt(kPoll, at, /*earliest=*/false); }

void DueTimers::ArmNews(absl::Time at) { ArmAt(kNews, at, /*earliest=*/true); }

void DueTimers::ArmAt(Kind kind, absl::Time at, bool earliest) {
  if (earliest && at >= at_[kind]) return;
  at_[kind] = at;
  tick_[kind] = ticks_.CeilTicks(at);
}

size_t DueTimers::Advance(absl::Time now) {
  const uint64_t now_tick = ticks_.FloorTicks(now);
  if (now_tick < now_tick_) return 0;
  now_tick_ = now_tick;
  size_t fired = 0;
  for (int kind = 0; kind < kKinds; ++kind) {
    if (at_[kind] == absl::InfiniteFuture() || tick_[kind] > now_tick) {
      continue;
    }
    at_[kind] = absl::InfiniteFuture();
    ++fired;
  }
  return fired;
}

absl::Time DueTimers::NextWake() const {
  bool armed = false;
  uint64_t next = TickConverter::kMaxTick;
  for (int kind = 0; kind < kKinds; ++kind) {
    if (at_[kind] == absl::InfiniteFuture()) continue;
    armed = true;
    next = std::min(next, tick_[kind]);
  }
  return armed ? ticks_.TimeOf(std::max(next, now_tick_))
               : absl::InfiniteFuture();
}

}  // namespace internal
}  // namespace delayq
