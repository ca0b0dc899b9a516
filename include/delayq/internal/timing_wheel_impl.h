// Copyright delayq authors.
//
// timing_wheel_impl.h — how TimingWheel (timing_wheel.h) works: the slab,
// placing a timer on its level and slot, the drain of the current tick,
// firing, cascading, listing, and the invariant checker. Included at the end
// of timing_wheel.h; not part of the API. The definitions are marked inline:
// outside the class body the compiler would otherwise weigh them as
// ordinary functions and inline less of the hot path (about 30% slower
// inserts and cancels, measured).
//
// Where a timer is follows from its tick and the wheel's time (elapsed_):
// a tick at or before it puts the timer in the drain (drain_, sorted by
// key), a later one in the slot WheelLevelFor() and WheelSlotFor() give,
// on the list WheelLaneFor() gives. Every move of the wheel's time
// re-places the timers it passes; the entry notes where it put them.

#ifndef DELAYQ_INTERNAL_TIMING_WHEEL_IMPL_H_
#define DELAYQ_INTERNAL_TIMING_WHEEL_IMPL_H_

#include <algorithm>
#include <cassert>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/base/attributes.h"
#include "delayq/timing_wheel.h"

namespace delayq {

// --- Life -------------------------------------------------------------------

template <typename T, typename P>
inline TimingWheel<T, P>::TimingWheel(uint64_t now_tick)
    : elapsed_(std::min(now_tick, kMaxTick)) {}

template <typename T, typename P>
inline TimingWheel<T, P>::TimingWheel(TimingWheel&& other) noexcept
    : entries_(std::move(other.entries_)),
      free_head_(other.free_head_),
      size_(other.size_),
      elapsed_(other.elapsed_),
      front_(other.front_),
      levels_(std::move(other.levels_)),
      drain_(std::move(other.drain_)),
      pending_(std::move(other.pending_)),
      scratch_(std::move(other.scratch_)) {
  other.Reset();
}

template <typename T, typename P>
inline TimingWheel<T, P>& TimingWheel<T, P>::operator=(
    TimingWheel&& other) noexcept {
  if (this != &other) {
    entries_ = std::move(other.entries_);
    free_head_ = other.free_head_;
    size_ = other.size_;
    elapsed_ = other.elapsed_;
    front_ = other.front_;
    levels_ = std::move(other.levels_);
    drain_ = std::move(other.drain_);
    pending_ = std::move(other.pending_);
    scratch_ = std::move(other.scratch_);
    other.Reset();
  }
  return *this;
}

template <typename T, typename P>
inline void TimingWheel<T, P>::Reset() {
  entries_.clear();
  free_head_ = kNil;
  size_ = 0;
  front_ = kNil;
  levels_ = {};
  drain_.Clear();
  pending_.clear();
  scratch_.clear();
}

// --- The API ----------------------------------------------------------------

template <typename T, typename P>
inline TimerId TimingWheel<T, P>::Insert(uint64_t deadline_tick, T value) {
  static_assert(std::is_same<P, DeadlineTimers<T>>::value,
                "Insert(deadline, value) is for the DeadlineTimers policy");
  return Emplace(std::min(deadline_tick, kMaxTick), std::move(value));
}

template <typename T, typename P>
inline TimerId TimingWheel<T, P>::Insert(T value) {
  static_assert(std::is_same<Stored, T>::value,
                "Insert(value) is for a policy whose values carry their key");
  return Emplace(std::move(value));
}

template <typename T, typename P>
inline bool TimingWheel<T, P>::Cancel(TimerId id) {
  if (id.index >= entries_.size()) return false;
  Entry& entry = entries_[id.index];
  if (!entry.in_use() || entry.generation != id.generation) return false;
  if (entry.drained()) {
    drain_.Erase(Item{KeyAt(id.index), entry.drain_order(), id.index});
  } else {
    Unlink(id.index);
    if (front_ == id.index) front_ = kNil;
  }
  entry.value.~Stored();
  Free(id.index);
  --size_;
  return true;
}

template <typename T, typename P>
template <typename Fn>
inline size_t TimingWheel<T, P>::Advance(uint64_t now_tick, Fn&& on_expire) {
  now_tick = std::min(now_tick, kMaxTick);
  if (now_tick < elapsed_) return 0;
  // The drain holds only timers due at or before elapsed_.
  size_t fired = FireDrain(on_expire);
  for (;;) {
    const std::optional<Due> due = NextDue();
    if (!due.has_value() || due->tick > now_tick) break;
    if (due->level == internal::kWheelTopLevel &&
        now_tick - due->tick >= internal::kWheelRange) {
      Rebase(now_tick);
    } else if (kKeyIsTick && due->level == 0) {
      elapsed_ = due->tick;
      fired += FireSlot(due->slot, on_expire);
    } else {
      Step(*due);
    }
    fired += FireDrain(on_expire);
  }
  elapsed_ = now_tick;
  return fired;
}

template <typename T, typename P>
inline const T* TimingWheel<T, P>::Front() {
  if (drain_.empty()) {
    if (size_ == 0) return nullptr;
    if (front_ != kNil) return &P::ValueOf(entries_[front_].value);
    MoveToFront();
  }
  return &P::ValueOf(entries_[drain_.front().index].value);
}

template <typename T, typename P>
template <typename Visit>
inline void TimingWheel<T, P>::ForEachInOrder(Visit&& visit) const {
  const bool more = drain_.ForEachInOrder([&](const Item& item) {
    return visit(P::ValueOf(entries_[item.index].value));
  });
  if (!more) return;
  std::vector<Item> items;
  // Below the top level every timer sits in a slot after the current one,
  // and all of a level's slots come before the next level's.
  for (int level = 0; level < internal::kWheelTopLevel; ++level) {
    const internal::WheelLevel& lv = levels_[level];
    for (int slot = internal::WheelSlotFor(elapsed_, level) + 1;
         slot < internal::kWheelSlots; ++slot) {
      if (!lv.occupied(slot)) continue;
      GatherItems(lv.lanes(slot), items);
      if (!VisitSorted(items, visit)) return;
    }
  }
  // The top level may hold timers beyond the span in any slot: sort it whole.
  const internal::WheelLevel& top = levels_[internal::kWheelTopLevel];
  for (int slot = 0; slot < internal::kWheelSlots; ++slot) {
    if (top.occupied(slot)) GatherItems(top.lanes(slot), items);
  }
  VisitSorted(items, visit);
}

template <typename T, typename P>
inline void TimingWheel<T, P>::Restart(uint64_t now_tick) {
  assert(empty());
  elapsed_ = std::min(now_tick, kMaxTick);
  front_ = kNil;
}

template <typename T, typename P>
inline std::optional<uint64_t> TimingWheel<T, P>::NextExpiration() const {
  if (!drain_.empty()) return elapsed_;
  const std::optional<Due> due = NextDue();
  if (!due.has_value()) return std::nullopt;
  return due->tick;
}

template <typename T, typename P>
inline size_t TimingWheel<T, P>::MemoryUsage() const {
  size_t bytes = sizeof(*this) + entries_.capacity() * sizeof(Entry) +
                 drain_.HeapBytes() + scratch_.capacity() * sizeof(uint32_t);
  for (const internal::WheelLevel& lv : levels_) bytes += lv.HeapBytes();
  return bytes;
}

// --- The slab ---------------------------------------------------------------

template <typename T, typename P>
template <typename... Args>
inline TimerId TimingWheel<T, P>::Emplace(Args&&... args) {
  const uint32_t index = Allocate();
  Entry& entry = entries_[index];
  new (&entry.value) Stored{std::forward<Args>(args)...};
  if (++size_ == kBusy) GrowLevels();
  const uint64_t tick = TickAt(index);
  if (tick <= elapsed_) {
    AddToDrain(index);
  } else {
    NoteFront(index);
    Link(index, tick);
  }
  return TimerId{index, entry.generation};
}

// Out of line, as are the other rare paths of Insert(), so that the common
// one stays small enough to be inlined.
template <typename T, typename P>
ABSL_ATTRIBUTE_NOINLINE void TimingWheel<T, P>::GrowLevels() {
  for (internal::WheelLevel& lv : levels_) lv.Grow();
}

template <typename T, typename P>
ABSL_ATTRIBUTE_NOINLINE void TimingWheel<T, P>::AddToDrain(uint32_t index) {
  drain_.Add(DrainItem(index));
}

template <typename T, typename P>
inline uint32_t TimingWheel<T, P>::Allocate() {
  uint32_t index;
  if (free_head_ != kNil) {
    index = free_head_;
    free_head_ = entries_[index].next;
  } else {
    index = GrowSlab();
  }
  ++entries_[index].generation;  // Odd: in use.
  return index;
}

// A new entry at the slab's end. Out of line: once the slab has grown to
// the peak, inserts only reuse freed entries.
template <typename T, typename P>
ABSL_ATTRIBUTE_NOINLINE uint32_t TimingWheel<T, P>::GrowSlab() {
  assert(entries_.size() < kNil);
  entries_.emplace_back();
  return static_cast<uint32_t>(entries_.size() - 1);
}

// REQUIRES: the entry's value is already destroyed and the entry unlinked.
template <typename T, typename P>
inline void TimingWheel<T, P>::Free(uint32_t index) {
  Entry& entry = entries_[index];
  ++entry.generation;  // Even: free.
  entry.prev = kNil;
  entry.next = free_head_;
  free_head_ = index;
}

template <typename T, typename P>
inline typename TimingWheel<T, P>::Key TimingWheel<T, P>::KeyAt(
    uint32_t index) const {
  return P::KeyOf(entries_[index].value);
}

template <typename T, typename P>
inline uint64_t TimingWheel<T, P>::TickAt(uint32_t index) const {
  return std::min<uint64_t>(P::TickOf(KeyAt(index)), kMaxTick);
}

// --- Levels, slots and the drain --------------------------------------------

// Puts a timer the wheel's time has moved past (a cascade, Rebase()) where
// its tick now belongs; those bound for the drain wait in pending_ for
// FlushToDrain().
template <typename T, typename P>
inline void TimingWheel<T, P>::Place(uint32_t index) {
  const uint64_t tick = TickAt(index);
  if (tick <= elapsed_) {
    pending_.push_back(DrainItem(index));
  } else {
    Link(index, tick);
  }
}

// Links entry `index` at the tail of the list its tick belongs to.
// REQUIRES: tick > elapsed_.
template <typename T, typename P>
inline void TimingWheel<T, P>::Link(uint32_t index, uint64_t tick) {
  const int level = internal::WheelLevelFor(elapsed_, tick);
  const int slot = internal::WheelSlotFor(tick, level);
  const int lane = internal::WheelLaneFor(tick);
  internal::WheelList& list = levels_[level].Occupy(slot, lane);
  Entry& entry = entries_[index];
  entry.level = static_cast<uint8_t>(level);
  entry.slot = static_cast<uint8_t>(slot);
  entry.lane = static_cast<uint8_t>(lane);
  entry.next = kNil;
  entry.prev = list.tail;
  if (list.tail == kNil) {
    list.head = index;
  } else {
    entries_[list.tail].next = index;
  }
  list.tail = index;
}

// REQUIRES: the entry is linked.
template <typename T, typename P>
inline void TimingWheel<T, P>::Unlink(uint32_t index) {
  Entry& entry = entries_[index];
  const int slot = entry.slot;
  internal::WheelLevel& lv = levels_[entry.level];
  internal::WheelList& list = lv.list(slot, entry.lane);
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
  if (list.empty()) lv.Vacate(slot);
}

// Numbers entry `index` for the drain (which it is about to join) and
// returns its item.
template <typename T, typename P>
inline typename TimingWheel<T, P>::Item TimingWheel<T, P>::DrainItem(
    uint32_t index) {
  const uint64_t order = drain_.NextOrder();
  entries_[index].SetDrained(order);
  return Item{KeyAt(index), order, index};
}

// Moves pending_ into the drain: as its run when the drain is empty (the
// usual case: the wheel's time only moves on once it is), one by one
// otherwise.
template <typename T, typename P>
inline void TimingWheel<T, P>::FlushToDrain() {
  if (pending_.empty()) return;
  if (drain_.empty()) {
    drain_.StartRun(pending_);
    return;
  }
  for (const Item& item : pending_) drain_.Add(item);
  pending_.clear();
}

// Keeps front_ the earliest timer in the slots as `index` joins them.
// REQUIRES: size_ counts `index` already.
template <typename T, typename P>
inline void TimingWheel<T, P>::NoteFront(uint32_t index) {
  if (front_ != kNil) {
    if (KeyAt(index) < KeyAt(front_)) front_ = index;
  } else if (size_ - 1 == drain_.size()) {
    front_ = index;  // The slots were empty.
  }
}

template <typename T, typename P>
inline void TimingWheel<T, P>::Prefetch(uint32_t index) const {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(&entries_[index]);
#endif
}

// The first occupied level holds the earliest slot: every slot of a level
// below lies inside the current slot of the levels above it.
template <typename T, typename P>
inline std::optional<typename TimingWheel<T, P>::Due>
TimingWheel<T, P>::NextDue() const {
  for (int level = 0; level < internal::kWheelLevels; ++level) {
    const internal::WheelLevel& lv = levels_[level];
    if (lv.empty()) continue;
    const int current = internal::WheelSlotFor(elapsed_, level);
    // On level 0 the current slot is empty (its timers are in the drain).
    // Above it, the current slot is behind us: only far timers parked on the
    // top level can be there, and their slot comes round again one full turn
    // later (distance 64), after every other slot of the level.
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

// Moves the wheel's time to `due` and processes its slot: a level-0 slot's
// timers join the drain, a higher slot's cascade.
template <typename T, typename P>
inline void TimingWheel<T, P>::Step(const Due& due) {
  elapsed_ = due.tick;
  front_ = kNil;
  Cascade(due.level, due.slot);
}

// Moves the wheel's time to the earliest timer's tick, so that the drain
// holds it. REQUIRES: the drain is empty and the slots are not.
template <typename T, typename P>
inline void TimingWheel<T, P>::MoveToFront() {
  while (drain_.empty()) {
    const Due due = *NextDue();
    if (due.level == internal::kWheelTopLevel) {
      // Only the top level holds timers: jump to the earliest of them
      // instead of turning it round.
      Rebase(kMaxTick);
    } else {
      Step(due);
    }
  }
}

template <typename T, typename P>
template <typename Fn>
inline size_t TimingWheel<T, P>::FireDrain(Fn& on_expire) {
  size_t fired = 0;
  while (!drain_.empty()) {
    const uint32_t index = drain_.front().index;
    drain_.PopFront();
    FireOne(index, on_expire);
    ++fired;
  }
  return fired;
}

// Fires the timers of a level-0 slot straight from its lists, which hold
// them in order when a key is its tick. REQUIRES: kKeyIsTick, and the
// wheel's time is the slot's tick.
template <typename T, typename P>
template <typename Fn>
inline size_t TimingWheel<T, P>::FireSlot(int slot, Fn& on_expire) {
  size_t fired = 0;
  for (const internal::WheelList& list : levels_[0].Take(slot)) {
    for (uint32_t index = list.head; index != kNil;) {
      const uint32_t next = entries_[index].next;
      FireOne(index, on_expire);
      index = next;
      ++fired;
    }
  }
  front_ = kNil;  // It was in this slot, the earliest.
  return fired;
}

template <typename T, typename P>
template <typename Fn>
inline void TimingWheel<T, P>::FireOne(uint32_t index, Fn& on_expire) {
  Entry& entry = entries_[index];
  Stored stored(std::move(entry.value));
  entry.value.~Stored();
  Free(index);
  --size_;
  on_expire(std::move(P::ValueOf(stored)));
}

// Re-sorts the timers of a slot whose start has come: those of a later
// tick into lower levels, those of this tick into the drain. The slot's
// lists are walked in turns, one entry of each per round, so that their
// cache misses overlap: the next entry of each list is prefetched a round
// before it is read.
template <typename T, typename P>
inline void TimingWheel<T, P>::Cascade(int level, int slot) {
  const internal::WheelLanes lanes = levels_[level].Take(slot);
  if constexpr (internal::kWheelPrefetchesKeys<P>) {
    CascadePrefetchingKeys(lanes);
  } else {
    std::array<uint32_t, internal::kWheelLanes> next;
    for (int lane = 0; lane < internal::kWheelLanes; ++lane) {
      next[lane] = lanes[lane].head;
    }
    for (bool more = true; more;) {
      more = false;
      for (uint32_t& index : next) {
        if (index == kNil) continue;
        const uint32_t current = index;
        index = entries_[current].next;
        if (index != kNil) {
          Prefetch(index);
          more = true;
        }
        Place(current);
      }
    }
  }
  if (!pending_.empty()) FlushToDrain();
}

// The same walk for a policy whose keys are read from elsewhere: each entry
// is placed a round after it is read, and its key is asked for in between.
template <typename T, typename P>
inline void TimingWheel<T, P>::CascadePrefetchingKeys(
    const internal::WheelLanes& lanes) {
  // Per list: the entry to read next, and the entry read last round.
  std::array<uint32_t, internal::kWheelLanes> next;
  std::array<uint32_t, internal::kWheelLanes> held;
  for (int lane = 0; lane < internal::kWheelLanes; ++lane) {
    next[lane] = lanes[lane].head;
    held[lane] = kNil;
  }
  for (bool more = true; more;) {
    more = false;
    for (int lane = 0; lane < internal::kWheelLanes; ++lane) {
      const uint32_t current = next[lane];
      if (current != kNil) {
        next[lane] = entries_[current].next;
        if (next[lane] != kNil) Prefetch(next[lane]);
        P::Prefetch(entries_[current].value);
        more = true;
      }
      if (held[lane] != kNil) Place(held[lane]);
      held[lane] = current;
    }
  }
}

// Only the top level holds timers and the wheel must move at least one full
// turn: jump straight to the earliest of their deadlines (or `now_tick`) and
// re-sort them all there, instead of turning the top level round once per
// 2^36 ticks.
template <typename T, typename P>
inline void TimingWheel<T, P>::Rebase(uint64_t now_tick) {
  scratch_.clear();
  internal::WheelLevel& top = levels_[internal::kWheelTopLevel];
  for (int slot = 0; slot < internal::kWheelSlots; ++slot) {
    if (!top.occupied(slot)) continue;
    for (const internal::WheelList& list : top.Take(slot)) {
      for (uint32_t i = list.head; i != kNil; i = entries_[i].next) {
        scratch_.push_back(i);
      }
    }
  }
  uint64_t target = now_tick;
  for (const uint32_t index : scratch_) {
    target = std::min(target, TickAt(index));
  }
  assert(target >= elapsed_);
  elapsed_ = target;
  front_ = kNil;
  for (const uint32_t index : scratch_) Place(index);
  FlushToDrain();
}

// --- Listing ----------------------------------------------------------------

// Appends the timers of a slot's lists to `items`, numbered in list order
// (which keeps equal keys in insertion order: they share a list).
template <typename T, typename P>
inline void TimingWheel<T, P>::GatherItems(const internal::WheelLanes& lanes,
                                           std::vector<Item>& items) const {
  for (const internal::WheelList& list : lanes) {
    for (uint32_t i = list.head; i != kNil; i = entries_[i].next) {
      items.push_back(Item{KeyAt(i), items.size(), i});
    }
  }
}

// Sorts `items`, visits them and empties the vector; false if `visit` was.
template <typename T, typename P>
template <typename Visit>
inline bool TimingWheel<T, P>::VisitSorted(std::vector<Item>& items,
                                           Visit& visit) const {
  std::sort(items.begin(), items.end(), typename Drain::Before());
  for (const Item& item : items) {
    if (!visit(P::ValueOf(entries_[item.index].value))) return false;
  }
  items.clear();
  return true;
}

// --- Checking ---------------------------------------------------------------

template <typename T, typename P>
inline bool TimingWheel<T, P>::CheckInvariants() const {
  size_t linked = 0;
  if (!CheckSlots(&linked) || !CheckDrain()) return false;
  size_t in_use = 0;
  for (const Entry& entry : entries_) in_use += entry.in_use();
  if (linked + drain_.size() != size_ || in_use != size_) return false;
  if (front_ == kNil) return true;
  // The known front is in the slots, and no timer there comes before it.
  if (front_ >= entries_.size() || !entries_[front_].in_use() ||
      TickAt(front_) <= elapsed_) {
    return false;
  }
  for (const internal::WheelLevel& lv : levels_) {
    for (int slot = 0; slot < internal::kWheelSlots; ++slot) {
      if (!lv.occupied(slot)) continue;
      for (const internal::WheelList& list : lv.lanes(slot)) {
        for (uint32_t i = list.head; i != kNil; i = entries_[i].next) {
          if (KeyAt(i) < KeyAt(front_)) return false;
        }
      }
    }
  }
  return true;
}

template <typename T, typename P>
inline bool TimingWheel<T, P>::CheckSlots(size_t* linked) const {
  for (int level = 0; level < internal::kWheelLevels; ++level) {
    const internal::WheelLevel& lv = levels_[level];
    const uint64_t range = internal::WheelSlotRange(level);
    const int current = internal::WheelSlotFor(elapsed_, level);
    for (int slot = 0; slot < internal::kWheelSlots; ++slot) {
      if (!lv.occupied(slot)) continue;
      // The tick at which this slot is processed next (as in NextDue()).
      const int distance =
          (slot - current + internal::kWheelSlots) % internal::kWheelSlots;
      uint64_t start = (elapsed_ & ~(range - 1)) + distance * range;
      if (level > 0 && distance == 0) start += internal::kWheelRange;
      bool any = false;
      for (int lane = 0; lane < internal::kWheelLanes; ++lane) {
        const internal::WheelList& list = lv.lanes(slot)[lane];
        if ((list.head == kNil) != (list.tail == kNil)) return false;
        uint32_t prev = kNil;
        for (uint32_t index = list.head; index != kNil;
             index = entries_[index].next) {
          if (index >= entries_.size() || ++*linked > size_) return false;
          any = true;
          const Entry& entry = entries_[index];
          const uint64_t tick = TickAt(index);
          if (!entry.in_use() || entry.prev != prev || tick <= elapsed_) {
            return false;
          }
          prev = index;
          // Where its tick puts it, and where it says it is.
          if (internal::WheelLevelFor(elapsed_, tick) != level ||
              internal::WheelSlotFor(tick, level) != slot ||
              internal::WheelLaneFor(tick) != lane || entry.level != level ||
              entry.slot != slot || entry.lane != lane) {
            return false;
          }
          // Not processed before its deadline, nor before now.
          if (start > tick || start <= elapsed_) return false;
          if (level < internal::kWheelTopLevel &&
              current + distance >= internal::kWheelSlots) {
            return false;
          }
          // Processed no earlier than needed: the deadline is inside this
          // slot unless the timer is parked beyond the wheel's span.
          if (level < internal::kWheelTopLevel && tick - start >= range) {
            return false;
          }
        }
        if (list.tail != prev) return false;
      }
      if (!any) return false;  // An occupied slot holds a timer.
    }
  }
  return true;
}

template <typename T, typename P>
inline bool TimingWheel<T, P>::CheckDrain() const {
  bool ok = true;
  bool first = true;
  Item last{};
  drain_.ForEachInOrder([&](const Item& item) {
    const bool in_order = first || typename Drain::Before()(last, item);
    ok = in_order && item.index < entries_.size() &&
         entries_[item.index].in_use() && entries_[item.index].drained() &&
         entries_[item.index].drain_order() == item.order &&
         TickAt(item.index) <= elapsed_ &&
         !(KeyAt(item.index) < item.key || item.key < KeyAt(item.index));
    first = false;
    last = item;
    return ok;
  });
  return ok;
}

}  // namespace delayq

#endif  // DELAYQ_INTERNAL_TIMING_WHEEL_IMPL_H_
