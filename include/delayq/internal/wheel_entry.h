// Copyright delayq authors.
//
// WheelEntry — one timer in a TimingWheel's slab (timing_wheel.h): where it
// is linked and what it stores, alive exactly while the entry is in use. A
// free entry is chained into the slab's free list through `next`. Its
// level, slot and list follow from its tick and the wheel's time, but are
// kept too (in bytes that alignment leaves free before the value), so that
// a cancel reads them instead of working them out. Internal: not part of
// the API.

#ifndef DELAYQ_INTERNAL_WHEEL_ENTRY_H_
#define DELAYQ_INTERNAL_WHEEL_ENTRY_H_

#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

#include "delayq/internal/wheel_geometry.h"

namespace delayq {
namespace internal {

template <typename Stored>
struct WheelEntry {
  WheelEntry() {}  // `value` is constructed by TimingWheel::Insert().
  WheelEntry(WheelEntry&& other) noexcept(
      std::is_nothrow_move_constructible<Stored>::value)
      : prev(other.prev),
        next(other.next),
        generation(other.generation),
        level(other.level),
        slot(other.slot),
        lane(other.lane) {
    if (in_use()) new (&value) Stored(std::move(other.value));
  }
  WheelEntry& operator=(WheelEntry&&) = delete;
  ~WheelEntry() {
    if (in_use()) value.~Stored();
  }

  // The generation counts up by one when the entry is taken and again when
  // it is freed, so it is odd exactly while the entry holds a timer.
  bool in_use() const { return generation % 2 == 1; }

  // `level` of a timer the wheel's time has reached, which is in the drain
  // (see WheelDrain), not in a slot's list.
  static constexpr uint8_t kDrained = 0xFF;

  bool drained() const { return level == kDrained; }
  // A drained timer's number in the drain, kept in its unused links.
  uint64_t drain_order() const { return (uint64_t{prev} << 32) | next; }
  void SetDrained(uint64_t order) {
    level = kDrained;
    prev = static_cast<uint32_t>(order >> 32);
    next = static_cast<uint32_t>(order);
  }

  uint32_t prev = kWheelNil;  // In a slot list.
  uint32_t next = kWheelNil;  // In a slot list, or the free list when unused.
  uint32_t generation = 0;
  uint8_t level = 0;  // kDrained, or the level whose slot's list holds it.
  uint8_t slot = 0;
  uint8_t lane = 0;
  union {
    Stored value;  // Alive exactly while in_use().
  };
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_INTERNAL_WHEEL_ENTRY_H_
