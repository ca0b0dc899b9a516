// Copyright delayq authors.
//
// WheelEntry — one timer in a TimingWheel's slab (timing_wheel.h): its
// deadline, where it is linked (level, slot, lane, neighbours) and its value,
// alive exactly while the entry is in use. A free entry is chained into the
// slab's free list through `next`, and its generation tells stale TimerIds
// apart. Internal: not part of the API.

#ifndef DELAYQ_INTERNAL_WHEEL_ENTRY_H_
#define DELAYQ_INTERNAL_WHEEL_ENTRY_H_

#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

#include "delayq/internal/wheel_geometry.h"

namespace delayq {
namespace internal {

template <typename T>
struct WheelEntry {
  static constexpr uint8_t kFree = 0xFF;  // `level` of an unused entry.

  WheelEntry() {}  // `value` is constructed by TimingWheel::Insert().
  WheelEntry(WheelEntry&& other) noexcept(
      std::is_nothrow_move_constructible<T>::value)
      : deadline(other.deadline),
        prev(other.prev),
        next(other.next),
        generation(other.generation),
        level(other.level),
        slot(other.slot),
        lane(other.lane) {
    if (in_use()) new (&value) T(std::move(other.value));
  }
  WheelEntry& operator=(WheelEntry&&) = delete;
  ~WheelEntry() {
    if (in_use()) value.~T();
  }

  bool in_use() const { return level != kFree; }

  uint64_t deadline = 0;
  uint32_t prev = kWheelNil;  // In a slot list.
  uint32_t next = kWheelNil;  // In a slot list, or the free list when unused.
  uint32_t generation = 0;
  uint8_t level = kFree;
  uint8_t slot = 0;
  uint8_t lane = 0;  // WheelLaneFor(deadline), kept for unlinking.
  union {
    T value;  // Alive exactly while in_use().
  };
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_INTERNAL_WHEEL_ENTRY_H_
