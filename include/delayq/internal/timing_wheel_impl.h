// Copyright delayq authors.
//
// timing_wheel_impl.h — how TimingWheel (timing_wheel.h) works: the slab,
// placing a timer on its level and slot, firing, cascading, and the
// invariant checker. Included at the end of timing_wheel.h; not part of the
// API. The definitions are marked inline: outside the class body the
// compiler would otherwise weigh them as ordinary functions and inline less
// of the hot path (about 30% slower inserts and cancels, measured).

#ifndef DELAYQ_INTERNAL_TIMING_WHEEL_IMPL_H_
#define DELAYQ_INTERNAL_TIMING_WHEEL_IMPL_H_

#include <algorithm>
#include <cassert>
#include <new>
#include <optional>
#include <utility>

#include "delayq/timing_wheel.h"

namespace delayq {

// --- Life -------------------------------------------------------------------

template <typename T>
inline TimingWheel<T>::TimingWheel(uint64_t now_tick)
    : elapsed_(std::min(now_tick, kMaxTick)) {}

template <typename T>
inline TimingWheel<T>::TimingWheel(TimingWheel&& other) noexcept
    : entries_(std::move(other.entries_)),
      free_head_(other.free_head_),
      size_(other.size_),
      elapsed_(other.elapsed_),
      overdue_unsorted_(other.overdue_unsorted_),
      levels_(other.levels_),
      scratch_(std::move(other.scratch_)) {
  other.Reset();
}

template <typename T>
inline TimingWheel<T>& TimingWheel<T>::operator=(TimingWheel&& other) noexcept {
  if (this != &other) {
    entries_ = std::move(other.entries_);
    free_head_ = other.free_head_;
    size_ = other.size_;
    elapsed_ = other.elapsed_;
    overdue_unsorted_ = other.overdue_unsorted_;
    levels_ = other.levels_;
    scratch_ = std::move(other.scratch_);
    other.Reset();
  }
  return *this;
}

template <typename T>
inline void TimingWheel<T>::Reset() {
  entries_.clear();
  free_head_ = kNil;
  size_ = 0;
  overdue_unsorted_ = false;
  levels_ = {};
  scratch_.clear();
}

// --- The API ----------------------------------------------------------------

template <typename T>
inline TimerId TimingWheel<T>::Insert(uint64_t deadline_tick, T value) {
  const uint32_t index = Allocate();
  Entry& entry = entries_[index];
  new (&entry.value) T(std::move(value));
  entry.deadline = std::min(deadline_tick, kMaxTick);
  entry.lane = static_cast<uint8_t>(internal::WheelLaneFor(entry.deadline));
  Place(index);
  ++size_;
  return TimerId{index, entry.generation};
}

template <typename T>
inline bool TimingWheel<T>::Cancel(TimerId id) {
  if (id.index >= entries_.size()) return false;
  Entry& entry = entries_[id.index];
  if (!entry.in_use() || entry.generation != id.generation) return false;
  Unlink(id.index);
  entry.value.~T();
  Free(id.index);
  --size_;
  return true;
}

template <typename T>
template <typename Fn>
inline size_t TimingWheel<T>::Advance(uint64_t now_tick, Fn&& on_expire) {
  now_tick = std::min(now_tick, kMaxTick);
  if (now_tick < elapsed_) return 0;
  size_t fired = 0;
  for (;;) {
    const std::optional<Due> due = NextDue();
    if (!due.has_value() || due->tick > now_tick) break;
    if (due->level == internal::kWheelTopLevel &&
        now_tick - due->tick >= internal::kWheelRange) {
      Rebase(now_tick);
      continue;
    }
    elapsed_ = due->tick;
    if (due->level == 0) {
      fired += Fire(due->slot, on_expire);
    } else {
      Cascade(due->level, due->slot);
    }
  }
  elapsed_ = now_tick;
  return fired;
}

template <typename T>
inline std::optional<uint64_t> TimingWheel<T>::NextExpiration() const {
  const std::optional<Due> due = NextDue();
  if (!due.has_value()) return std::nullopt;
  return due->tick;
}

template <typename T>
inline size_t TimingWheel<T>::MemoryUsage() const {
  return sizeof(*this) + entries_.capacity() * sizeof(Entry) +
         scratch_.capacity() * sizeof(uint32_t);
}

// --- The slab ---------------------------------------------------------------

template <typename T>
inline uint32_t TimingWheel<T>::Allocate() {
  if (free_head_ != kNil) {
    const uint32_t index = free_head_;
    free_head_ = entries_[index].next;
    return index;
  }
  assert(entries_.size() < kNil);
  entries_.emplace_back();
  return static_cast<uint32_t>(entries_.size() - 1);
}

// REQUIRES: the entry's value is already destroyed and the entry unlinked.
template <typename T>
inline void TimingWheel<T>::Free(uint32_t index) {
  Entry& entry = entries_[index];
  entry.level = Entry::kFree;
  ++entry.generation;
  entry.prev = kNil;
  entry.next = free_head_;
  free_head_ = index;
}

// --- Levels and slots -------------------------------------------------------

// Links entry `index` into the slot that matches its deadline at the current
// time. An overdue timer goes to the current level-0 slot, which Advance()
// processes first.
template <typename T>
inline void TimingWheel<T>::Place(uint32_t index) {
  Entry& entry = entries_[index];
  int level = 0;
  int slot = internal::WheelSlotFor(elapsed_, 0);
  if (entry.deadline > elapsed_) {
    level = internal::WheelLevelFor(elapsed_, entry.deadline);
    slot = internal::WheelSlotFor(entry.deadline, level);
  } else if (entry.deadline < elapsed_) {
    overdue_unsorted_ = true;
  }
  entry.level = static_cast<uint8_t>(level);
  entry.slot = static_cast<uint8_t>(slot);
  internal::WheelLevel& lv = levels_[level];
  internal::WheelList& list = lv.list(slot, entry.lane);
  entry.next = kNil;
  entry.prev = list.tail;
  if (list.tail == kNil) {
    list.head = index;
    lv.Occupy(slot);
  } else {
    entries_[list.tail].next = index;
  }
  list.tail = index;
}

template <typename T>
inline void TimingWheel<T>::Unlink(uint32_t index) {
  Entry& entry = entries_[index];
  internal::WheelLevel& lv = levels_[entry.level];
  internal::WheelList& list = lv.list(entry.slot, entry.lane);
  if (entry.prev == kNil) {
    list.head = entry.next;
  } else {
    entries_[entry.prev].next = entry.next;
  }
  if (entry.next == kNil) {
    list.tail = entry.prev;
  } else {
    entries_[entry.next].prev = entry.prev;
  }
  if (list.empty()) lv.Vacate(entry.slot);
}

// Appends the entries of a taken slot to scratch_, list by list.
template <typename T>
inline void TimingWheel<T>::Gather(const internal::WheelLanes& heads) {
  for (uint32_t index : heads) {
    for (; index != kNil; index = entries_[index].next) {
      scratch_.push_back(index);
    }
  }
}

template <typename T>
inline void TimingWheel<T>::Prefetch(uint32_t index) const {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(&entries_[index]);
#endif
}

// The first occupied level holds the earliest slot: every slot of a level
// below lies inside the current slot of the levels above it.
template <typename T>
inline std::optional<typename TimingWheel<T>::Due> TimingWheel<T>::NextDue()
    const {
  for (int level = 0; level < internal::kWheelLevels; ++level) {
    const internal::WheelLevel& lv = levels_[level];
    if (lv.empty()) continue;
    const int current = internal::WheelSlotFor(elapsed_, level);
    // On level 0 the current slot holds timers due now. Above it, the
    // current slot is behind us: only far timers parked on the top level can
    // be there, and their slot comes round again one full turn later
    // (distance 64), after every other slot of the level.
    const int skip = level == 0 ? 0 : 1;
    const int distance =
        skip + lv.DistanceToOccupied((current + skip) % internal::kWheelSlots);
    const uint64_t range = internal::WheelSlotRange(level);
    const uint64_t tick = (elapsed_ & ~(range - 1)) + distance * range;
    // Below the top level, timers always sit ahead of the current slot.
    assert(level == internal::kWheelTopLevel ||
           current + distance < internal::kWheelSlots);
    return Due{level, (current + distance) % internal::kWheelSlots, tick};
  }
  return std::nullopt;
}

// --- Firing and cascading ---------------------------------------------------

// Fires every timer in level-0 slot `slot`, which is due now. Outside the
// overdue case all of them share one deadline, hence one list.
template <typename T>
template <typename Fn>
inline size_t TimingWheel<T>::Fire(int slot, Fn& on_expire) {
  const internal::WheelLanes heads = levels_[0].Take(slot);
  if (overdue_unsorted_) {
    // Timers inserted with a deadline in the past share this slot with those
    // due exactly now; put them in deadline order. Equal deadlines share a
    // list, so a stable sort keeps their insertion order.
    overdue_unsorted_ = false;
    scratch_.clear();
    Gather(heads);
    std::stable_sort(scratch_.begin(), scratch_.end(),
                     [this](uint32_t a, uint32_t b) {
                       return entries_[a].deadline < entries_[b].deadline;
                     });
    for (const uint32_t index : scratch_) FireOne(index, on_expire);
    return scratch_.size();
  }
  size_t fired = 0;
  for (uint32_t index : heads) {
    while (index != kNil) {
      const uint32_t next = entries_[index].next;
      FireOne(index, on_expire);
      index = next;
      ++fired;
    }
  }
  return fired;
}

template <typename T>
template <typename Fn>
inline void TimingWheel<T>::FireOne(uint32_t index, Fn& on_expire) {
  Entry& entry = entries_[index];
  assert(entry.deadline <= elapsed_);
  T value(std::move(entry.value));
  entry.value.~T();
  Free(index);
  --size_;
  on_expire(std::move(value));
}

// Re-sorts the timers of a higher-level slot whose start has come. The slot's
// lists are walked in turns, one entry of each per round, with the next entry
// of each list prefetched a round ahead.
template <typename T>
inline void TimingWheel<T>::Cascade(int level, int slot) {
  internal::WheelLanes cursor = levels_[level].Take(slot);
  for (bool more = true; more;) {
    more = false;
    for (uint32_t& index : cursor) {
      if (index == kNil) continue;
      const uint32_t current = index;
      index = entries_[current].next;
      if (index != kNil) {
        Prefetch(index);
        more = true;
      }
      assert(entries_[current].deadline >= elapsed_);
      Place(current);
    }
  }
}

// Only the top level holds timers and the wheel must move at least one full
// turn: jump straight to the earliest of their deadlines (or `now_tick`) and
// re-sort them all there, instead of turning the top level round once per
// 2^36 ticks.
template <typename T>
inline void TimingWheel<T>::Rebase(uint64_t now_tick) {
  scratch_.clear();
  for (int slot = 0; slot < internal::kWheelSlots; ++slot) {
    Gather(levels_[internal::kWheelTopLevel].Take(slot));
  }
  uint64_t target = now_tick;
  for (const uint32_t index : scratch_) {
    target = std::min(target, entries_[index].deadline);
  }
  assert(target >= elapsed_);
  elapsed_ = target;
  for (const uint32_t index : scratch_) Place(index);
}

// --- Checking ---------------------------------------------------------------

template <typename T>
inline bool TimingWheel<T>::CheckInvariants() const {
  size_t linked = 0;
  for (int level = 0; level < internal::kWheelLevels; ++level) {
    const internal::WheelLevel& lv = levels_[level];
    const uint64_t range = internal::WheelSlotRange(level);
    const int current = internal::WheelSlotFor(elapsed_, level);
    for (int slot = 0; slot < internal::kWheelSlots; ++slot) {
      if (lv.occupied(slot) == lv.SlotEmpty(slot)) return false;
      // The tick at which this slot is processed next (as in NextDue()).
      const int distance =
          (slot - current + internal::kWheelSlots) % internal::kWheelSlots;
      uint64_t start = (elapsed_ & ~(range - 1)) + distance * range;
      if (level > 0 && distance == 0) start += internal::kWheelRange;
      for (int lane = 0; lane < internal::kWheelLanes; ++lane) {
        const internal::WheelList& list = lv.list(slot, lane);
        if ((list.head == kNil) != (list.tail == kNil)) return false;
        uint32_t prev = kNil;
        for (uint32_t index = list.head; index != kNil;
             index = entries_[index].next) {
          if (index >= entries_.size() || ++linked > size_) return false;
          const Entry& entry = entries_[index];
          if (entry.level != level || entry.slot != slot) return false;
          if (entry.lane != lane ||
              internal::WheelLaneFor(entry.deadline) != lane) {
            return false;
          }
          if (entry.prev != prev) return false;
          prev = index;
          if (level == 0 && distance == 0) {
            if (entry.deadline > elapsed_) return false;
            continue;
          }
          // Not processed before its deadline, nor before now.
          if (start > entry.deadline || start <= elapsed_) return false;
          if (level < internal::kWheelTopLevel &&
              current + distance >= internal::kWheelSlots) {
            return false;
          }
          // Processed no earlier than needed: the deadline is inside this
          // slot unless the timer is parked beyond the wheel's span.
          if (level < internal::kWheelTopLevel &&
              entry.deadline - start >= range) {
            return false;
          }
        }
        if (list.tail != prev) return false;
      }
    }
  }
  size_t in_use = 0;
  for (const Entry& entry : entries_) in_use += entry.in_use();
  return linked == size_ && in_use == size_;
}

}  // namespace delayq

#endif  // DELAYQ_INTERNAL_TIMING_WHEEL_IMPL_H_
