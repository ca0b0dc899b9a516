// Copyright delayq authors.
//
// tick_converter.h — converting between absl::Time and integer ticks.
//
// A TimingWheel counts time in ticks. A TickConverter fixes what a tick is
// (its length, and the time of tick 0) and converts both ways, rounding so
// that a timer never fires early:
//
//   delayq::TickConverter ticks(start, absl::Milliseconds(1));
//   wheel.Insert(ticks.CeilTicks(deadline), job);       // deadlines round up
//   wheel.Advance(ticks.FloorTicks(clock.Now()), fire);  // "now" rounds down
//
// Thread-safety: a TickConverter is immutable; use it from any thread.

#ifndef DELAYQ_TICK_CONVERTER_H_
#define DELAYQ_TICK_CONVERTER_H_

#include <algorithm>
#include <cassert>
#include <cstdint>

#include "absl/time/time.h"

namespace delayq {

// TickConverter
//
// Converts between absl::Time and wheel ticks of length `tick` counted from
// `origin`. Deadlines round up (CeilTicks) so that nothing fires early; the
// current time rounds down (FloorTicks) so that a timer fires at most one tick
// late.
class TickConverter {
 public:
  // Ticks are capped here (about 146 million years at 1 ms tick length); the
  // timing wheel uses the same cap.
  static constexpr uint64_t kMaxTick = uint64_t{1} << 62;

  // REQUIRES: `origin` is finite and `tick` > absl::ZeroDuration().
  TickConverter(absl::Time origin, absl::Duration tick)
      : origin_(origin), tick_(tick) {
    assert(tick > absl::ZeroDuration());
  }

  // The first tick at or after `t`; 0 for t <= origin, kMaxTick for times
  // beyond it (including absl::InfiniteFuture()).
  uint64_t CeilTicks(absl::Time t) const { return Ticks(t, /*round_up=*/true); }

  // The last tick at or before `t`; 0 for t <= origin, kMaxTick for times
  // beyond it.
  uint64_t FloorTicks(absl::Time t) const {
    return Ticks(t, /*round_up=*/false);
  }

  // The time at which `tick` starts: origin + tick * tick().
  absl::Time TimeOf(uint64_t tick) const {
    return origin_ + tick_ * static_cast<int64_t>(std::min(tick, kMaxTick));
  }

  absl::Duration tick() const { return tick_; }
  absl::Time origin() const { return origin_; }

 private:
  uint64_t Ticks(absl::Time t, bool round_up) const {
    if (t <= origin_) return 0;
    if (t == absl::InfiniteFuture()) return kMaxTick;
    absl::Duration remainder;
    const int64_t whole = absl::IDivDuration(t - origin_, tick_, &remainder);
    uint64_t ticks = static_cast<uint64_t>(whole);
    if (round_up && remainder > absl::ZeroDuration()) ++ticks;
    return std::min(ticks, kMaxTick);
  }

  absl::Time origin_;
  absl::Duration tick_;
};

}  // namespace delayq

#endif  // DELAYQ_TICK_CONVERTER_H_
