// Copyright delayq authors.
//
// WheelLevel — one level of a TimingWheel (timing_wheel.h): its 64 slots,
// each a few lists of timers (by slab index), and the occupancy bitmap that
// finds the next occupied slot without a scan. It owns the list heads and
// tails and the bitmap; the links between timers live in the wheel's slab,
// so linking and unlinking stay with the wheel. Internal: not part of the
// API.

#ifndef DELAYQ_INTERNAL_WHEEL_LEVEL_H_
#define DELAYQ_INTERNAL_WHEEL_LEVEL_H_

#include <array>
#include <cstdint>

#include "delayq/internal/wheel_geometry.h"

namespace delayq {
namespace internal {

// An intrusive doubly-linked list of slab entries, by index.
struct WheelList {
  uint32_t head = kWheelNil;
  uint32_t tail = kWheelNil;

  bool empty() const { return head == kWheelNil; }
};

// The heads of a slot's lists, as WheelLevel::Take() hands them over.
using WheelLanes = std::array<uint32_t, kWheelLanes>;

class WheelLevel {
 public:
  // The list of `slot` that holds timers of `lane`.
  WheelList& list(int slot, int lane) { return slots_[slot][lane]; }
  const WheelList& list(int slot, int lane) const { return slots_[slot][lane]; }

  // Whether any slot holds a timer.
  bool empty() const { return occupied_ == 0; }
  // Whether `slot` holds a timer, as the bitmap says.
  bool occupied(int slot) const { return (occupied_ >> slot) & 1; }
  // Whether every list of `slot` is empty, as the lists say.
  bool SlotEmpty(int slot) const {
    for (const WheelList& l : slots_[slot]) {
      if (!l.empty()) return false;
    }
    return true;
  }

  // After a timer was linked into `slot`.
  void Occupy(int slot) { occupied_ |= uint64_t{1} << slot; }
  // After a timer was unlinked from `slot`: clears its bit once the slot
  // holds nothing.
  void Vacate(int slot) {
    if (SlotEmpty(slot)) occupied_ &= ~(uint64_t{1} << slot);
  }

  // Detaches every list of `slot` and returns their heads; the slot is
  // then empty.
  WheelLanes Take(int slot) {
    WheelLanes heads;
    for (int lane = 0; lane < kWheelLanes; ++lane) {
      heads[lane] = slots_[slot][lane].head;
      slots_[slot][lane] = WheelList();
    }
    occupied_ &= ~(uint64_t{1} << slot);
    return heads;
  }

  // How many slots past `from` (0..63, going round; `from` itself is 0)
  // the first occupied slot lies. REQUIRES: !empty().
  int DistanceToOccupied(int from) const {
    return WheelDistanceToOccupied(occupied_, from);
  }

 private:
  uint64_t occupied_ = 0;  // Bit s set <=> some list of slots_[s] non-empty.
  std::array<std::array<WheelList, kWheelLanes>, kWheelSlots> slots_;
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_INTERNAL_WHEEL_LEVEL_H_
