// Copyright delayq authors.
//
// WheelLevel — one level of a TimingWheel (timing_wheel.h): its 64 slots,
// each a few lists of timers (by slab index), and the occupancy bitmap that
// finds the next occupied slot without a scan. It owns the list heads and
// tails and the bitmap; the links between timers live in the wheel's slab,
// so linking and unlinking stay with the wheel. Internal: not part of the
// API.
//
// Sparse while small: a level starts with room for a few occupied slots,
// packed in slot order (a slot's place is the number of occupied slots
// before it, a popcount of the bitmap), so a wheel that holds a few timers,
// or whose timers fall in a few far slots, costs a few words per level
// instead of 64 slots' worth; a store keeps one wheel per topic and kind of
// timer. Once a few are not enough, or the wheel is busy (Grow()), the level
// takes room for all 64 slots, indexed directly, and keeps it, as the slab
// keeps its peak: a busy wheel's memory stops moving once it is warm, and
// its slots come and go without moving their neighbours.

#ifndef DELAYQ_INTERNAL_WHEEL_LEVEL_H_
#define DELAYQ_INTERNAL_WHEEL_LEVEL_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/numeric/bits.h"
#include "delayq/internal/wheel_geometry.h"

namespace delayq {
namespace internal {

// An intrusive doubly-linked list of slab entries, by index.
struct WheelList {
  uint32_t head = kWheelNil;
  uint32_t tail = kWheelNil;

  bool empty() const { return head == kWheelNil; }
};

// The lists of one slot, one per lane; also how WheelLevel::Take() hands
// over a slot's lists.
using WheelLanes = std::array<WheelList, kWheelLanes>;

class WheelLevel {
 public:
  // Whether any slot holds a timer.
  bool empty() const { return occupied_ == 0; }
  // Whether `slot` holds a timer.
  bool occupied(int slot) const { return (occupied_ >> slot) & 1; }

  // The list of `slot` that holds timers of `lane`, made when the slot was
  // empty. Link a timer into it.
  WheelList& Occupy(int slot, int lane) {
    if (!occupied(slot)) {
      if (!full_) Open(slot);
      occupied_ |= uint64_t{1} << slot;
    }
    return lanes(slot)[lane];
  }
  // The list of an occupied `slot` for `lane`.
  WheelList& list(int slot, int lane) { return lanes(slot)[lane]; }

  // The lists of an occupied `slot`.
  const WheelLanes& lanes(int slot) const {
    return slots_[full_ ? slot : Rank(slot)];
  }

  // After a timer was unlinked from `slot`: drops the slot once its lists
  // are all empty.
  void Vacate(int slot) {
    for (const WheelList& l : lanes(slot)) {
      if (!l.empty()) return;
    }
    Drop(slot);
  }

  // Detaches every list of an occupied `slot` and returns them; the slot is
  // then empty.
  WheelLanes Take(int slot) {
    WheelLanes& lists = lanes(slot);
    const WheelLanes taken = lists;
    lists = WheelLanes();
    Drop(slot);
    return taken;
  }

  // How many slots past `from` (0..63, going round; `from` itself is 0)
  // the first occupied slot lies. REQUIRES: !empty().
  int DistanceToOccupied(int from) const {
    return WheelDistanceToOccupied(occupied_, from);
  }

  // The wheel is busy: the level takes room for all its slots (now, if it
  // has any, or when it gets one) and keeps it.
  void Grow() {
    busy_ = true;
    if (!slots_.empty()) MakeFull();
  }

  // Bytes held outside the object.
  size_t HeapBytes() const { return slots_.capacity() * sizeof(WheelLanes); }

 private:
  static constexpr size_t kFewSlots = 4;

  WheelLanes& lanes(int slot) { return slots_[full_ ? slot : Rank(slot)]; }
  // The place of `slot` among the occupied slots, while packed.
  size_t Rank(int slot) const {
    return absl::popcount(occupied_ & ((uint64_t{1} << slot) - 1));
  }
  // REQUIRES: the slot's lists are empty (or were taken: see Take()).
  void Drop(int slot) {
    if (!full_) slots_.erase(slots_.begin() + Rank(slot));
    occupied_ &= ~(uint64_t{1} << slot);
  }
  // Makes room for `slot` while packed. Out of line: a busy wheel's levels
  // are full, and its inserts do not carry this code.
  ABSL_ATTRIBUTE_NOINLINE void Open(int slot) {
    if (slots_.size() < kFewSlots && !busy_) {
      slots_.insert(slots_.begin() + Rank(slot), WheelLanes());
    } else {
      MakeFull();
    }
  }
  // Unpacks the occupied slots into room for all 64.
  void MakeFull() {
    if (full_) return;
    std::vector<WheelLanes> all(kWheelSlots);
    for (int slot = 0; slot < kWheelSlots; ++slot) {
      if (occupied(slot)) all[slot] = slots_[Rank(slot)];
    }
    slots_.swap(all);
    full_ = true;
  }

  uint64_t occupied_ = 0;  // Bit s set <=> slot s holds a timer.
  bool full_ = false;      // slots_ is indexed by slot, not packed.
  bool busy_ = false;      // Grow() was called.
  std::vector<WheelLanes> slots_;
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_INTERNAL_WHEEL_LEVEL_H_
