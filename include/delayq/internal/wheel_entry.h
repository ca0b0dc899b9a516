// Copyright delayq authors.
//
// WheelEntry — one timer in a TimingWheel's slab (timing_wheel.h): where it
// is linked and what it stores, alive exactly while the entry is in use.
// Nothing else: the level, slot and list of a timer follow from its deadline
// and the wheel's time, so they are computed, not kept. A free entry is
// chained into the slab's free list through `next`. Internal: not part of
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
      : prev(other.prev), next(other.next), generation(other.generation) {
    if (in_use()) new (&value) Stored(std::move(other.value));
  }
  WheelEntry& operator=(WheelEntry&&) = delete;
  ~WheelEntry() {
    if (in_use()) value.~Stored();
  }

  // The generation counts up by one when the entry is taken and again when
  // it is freed, so it is odd exactly while the entry holds a timer.
  bool in_use() const { return generation % 2 == 1; }

  // The drain position of a timer the wheel's time has reached (which is in
  // no slot list): see WheelDrain.
  uint64_t drain_order() const { return (uint64_t{prev} << 32) | next; }
  void set_drain_order(uint64_t order) {
    prev = static_cast<uint32_t>(order >> 32);
    next = static_cast<uint32_t>(order);
  }

  uint32_t prev = kWheelNil;  // In a slot list.
  uint32_t next = kWheelNil;  // In a slot list, or the free list when unused.
  uint32_t generation = 0;
  union {
    Stored value;  // Alive exactly while in_use().
  };
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_INTERNAL_WHEEL_ENTRY_H_
