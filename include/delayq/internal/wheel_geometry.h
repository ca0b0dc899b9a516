// Copyright delayq authors.
//
// wheel_geometry.h — the arithmetic of TimingWheel (timing_wheel.h): how
// many levels and slots, which level and slot a deadline falls into, which
// of a slot's lists holds it. Internal: included by timing_wheel.h, tested
// on its own (tests/wheel/wheel_math_test.cc); not part of the API.

#ifndef DELAYQ_INTERNAL_WHEEL_GEOMETRY_H_
#define DELAYQ_INTERNAL_WHEEL_GEOMETRY_H_

#include <cassert>
#include <cstdint>

#include "absl/numeric/bits.h"
#include "delayq/tick_converter.h"

namespace delayq {
namespace internal {

// Geometry of the wheel. Exposed for tests.
inline constexpr int kWheelSlotBits = 6;
inline constexpr int kWheelSlots = 1 << kWheelSlotBits;  // per level
inline constexpr int kWheelLevels = 6;
inline constexpr int kWheelTopLevel = kWheelLevels - 1;
// Ticks spanned by the whole wheel: 64^6 = 2^36.
inline constexpr uint64_t kWheelRange = uint64_t{1}
                                        << (kWheelSlotBits * kWheelLevels);
// Ticks are capped here (2^62, about 146 million years at 1 ms) so that slot
// arithmetic near the cap cannot overflow 64 bits.
inline constexpr uint64_t kWheelMaxTick = TickConverter::kMaxTick;

// "No entry": the end of a list, an empty list's head and tail.
inline constexpr uint32_t kWheelNil = UINT32_MAX;

// Ticks covered by one slot of `level`: 64^level.
inline uint64_t WheelSlotRange(int level) {
  return uint64_t{1} << (kWheelSlotBits * level);
}

// The level on which a timer due at `when` is kept while the wheel's time is
// `elapsed`. REQUIRES: elapsed <= when.
//
// It is the level of the highest bit in which `elapsed` and `when` differ:
// all higher bits agree, so the timer falls inside the current slot of every
// level above, and in a later slot of this one. A difference above the
// wheel's span clamps to the top level.
inline int WheelLevelFor(uint64_t elapsed, uint64_t when) {
  assert(elapsed <= when);
  const uint64_t masked = (elapsed ^ when) | (kWheelSlots - 1);
  const int significant = static_cast<int>(absl::bit_width(masked)) - 1;
  const int level = significant / kWheelSlotBits;
  return level < kWheelLevels ? level : kWheelTopLevel;
}

// The slot of `level` into which a deadline of `when` falls.
inline int WheelSlotFor(uint64_t when, int level) {
  return static_cast<int>((when >> (kWheelSlotBits * level)) &
                          (kWheelSlots - 1));
}

// Each slot keeps its timers in kWheelLanes lists. Cascading a slot walks
// its lists side by side, so the memory loads of one list's next timer
// overlap with the work on the others instead of waiting one by one (walking
// a long list of timers scattered over a large slab is otherwise bound by
// memory latency).
inline constexpr int kWheelLaneBits = 2;
inline constexpr int kWheelLanes = 1 << kWheelLaneBits;

// The list of a slot that holds timers due at `when`: a hash of the deadline,
// so that timers due at the same tick share one list (which keeps them in
// insertion order) while different deadlines spread evenly.
inline int WheelLaneFor(uint64_t when) {
  return static_cast<int>((when * uint64_t{0x9E3779B97F4A7C15}) >>
                          (64 - kWheelLaneBits));
}

// How many slots past `current` (0..63, going round) the first set bit of
// `occupied` lies; `current` itself counts as distance 0.
// REQUIRES: occupied != 0.
inline int WheelDistanceToOccupied(uint64_t occupied, int current) {
  assert(occupied != 0);
  return absl::countr_zero(absl::rotr(occupied, current));
}

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_INTERNAL_WHEEL_GEOMETRY_H_
