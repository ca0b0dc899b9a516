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
  NoteChange();
}

size_t DueTimers::Advance(absl::Time now) {
  if (now < fire_at_) {
    latest_ = std::max(latest_, now);
    return 0;
  }
  const uint64_t now_tick = ticks_.FloorTicks(now);
  if (now < latest_ && now_tick < ticks_.FloorTicks(latest_)) return 0;
  latest_ = std::max(latest_, now);
  size_t fired = 0;
  for (int kind = 0; kind < kKinds; ++kind) {
    if (at_[kind] == absl::InfiniteFuture() || tick_[kind] > now_tick) {
      continue;
    }
    at_[kind] = absl::InfiniteFuture();
    ++fired;
  }
  if (fired > 0) NoteChange();
  return fired;
}

absl::Time DueTimers::NextWake() const {
  uint64_t next;
  if (!EarliestTick(&next)) return absl::InfiniteFuture();
  return ticks_.TimeOf(std::max(next, ticks_.FloorTicks(latest_)));
}

bool DueTimers::EarliestTick(uint64_t* tick) const {
  bool armed = false;
  *tick = TickConverter::kMaxTick;
  for (int kind = 0; kind < kKinds; ++kind) {
    if (at_[kind] == absl::InfiniteFuture()) continue;
    armed = true;
    *tick = std::min(*tick, tick_[kind]);
  }
  return armed;
}

void DueTimers::NoteChange() {
  uint64_t next;
  fire_at_ = EarliestTick(&next) ? ticks_.TimeOf(next) : absl::InfiniteFuture();
}

}  // namespace internal
}  // namespace delayq
