// Copyright delayq authors.
//
// timing_wheel.h — a hierarchical timing wheel: many timers, O(1) insert and
// cancel, and a cheap answer to "when is the next thing due?".
//
// The scheduler keeps its delayed jobs in a TimingWheel, and a program may use
// one on its own for its own timers (a game server's respawns, buffs and
// timeouts). The wheel counts time in integer ticks; the caller decides what a
// tick is (1 ms by default in the scheduler) and converts with TickConverter.
//
// Design (after Varghese & Lauck, "Hashed and Hierarchical Timing Wheels",
// and the wheel in tokio's runtime): 6 levels of 64 slots. A slot on level L
// covers 64^L ticks, so level 0 resolves single ticks and the wheel spans
// 64^6 = 2^36 ticks (about 2.2 years at 1 ms). Each level keeps a 64-bit
// occupancy bitmap, so the next occupied slot is found with a rotate and a
// count-trailing-zeros instead of a scan. Timers live in a slab (a vector plus
// a free list) and are chained by index into intrusive doubly-linked lists,
// so Insert and Cancel are O(1) and allocate nothing once the slab has grown
// to the peak number of pending timers. Each slot has four such lists, picked
// by a hash of the deadline, so that a cascade can walk them side by side and
// overlap their cache misses. Higher levels cascade lazily:
// the timers of a level-L slot are re-sorted into lower levels only when the
// wheel's time reaches the start of that slot. A timer farther away than the
// wheel's span is parked on the top level and re-cascaded each time its slot
// comes round, until its real deadline is in range; it never fires early.
//
// Example:
//
//   delayq::TickConverter ticks(start, absl::Milliseconds(1));
//   delayq::TimingWheel<std::string> wheel(ticks.FloorTicks(start));
//   delayq::TimerId respawn =
//       wheel.Insert(ticks.CeilTicks(start + absl::Seconds(90)), "boss");
//   wheel.Cancel(respawn);  // the boss was killed again; no respawn
//   ...
//   // In the main loop:
//   wheel.Advance(ticks.FloorTicks(clock.Now()),
//                 [&](std::string&& what) { Respawn(what); });
//   // Sleep until ticks.TimeOf(*wheel.NextExpiration()) or new work arrives.
//
// Thread-safety: a TimingWheel is not thread-safe. Callers that share one
// between threads hold their own lock around every call. TickConverter
// (tick_converter.h, included here) is immutable and may be used from any
// thread.

#ifndef DELAYQ_TIMING_WHEEL_H_
#define DELAYQ_TIMING_WHEEL_H_

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/numeric/bits.h"
#include "delayq/tick_converter.h"  // IWYU pragma: export

namespace delayq {

// TimerId
//
// Identifies one inserted timer; cheap to copy. A default-constructed id is
// invalid. An id stays safe to use after its timer fired or was cancelled:
// the slab slot carries a generation counter, so a stale id never cancels a
// newer timer that reuses the same slot (unless 2^32 timers passed through
// that one slot in between).
struct TimerId {
  uint32_t index = UINT32_MAX;
  uint32_t generation = 0;

  bool valid() const { return index != UINT32_MAX; }

  friend bool operator==(TimerId a, TimerId b) {
    return a.index == b.index && a.generation == b.generation;
  }
  friend bool operator!=(TimerId a, TimerId b) { return !(a == b); }
};

namespace internal {

// Geometry of the wheel. Exposed for tests and for TickConverter.
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

// TimingWheel
//
// A set of pending timers, each carrying a value of type T, keyed by an
// integer deadline tick. T must be move-constructible; its move constructor
// should not throw.
template <typename T>
class TimingWheel {
 public:
  // Deadlines and times above this are treated as this value.
  static constexpr uint64_t kMaxTick = internal::kWheelMaxTick;

  // Creates an empty wheel whose time is `now_tick`.
  explicit TimingWheel(uint64_t now_tick = 0)
      : elapsed_(std::min(now_tick, kMaxTick)) {}

  TimingWheel(const TimingWheel&) = delete;
  TimingWheel& operator=(const TimingWheel&) = delete;
  // Moving transfers every pending timer; the moved-from wheel is left empty
  // (its time unchanged) and usable.
  TimingWheel(TimingWheel&& other) noexcept
      : entries_(std::move(other.entries_)),
        free_head_(other.free_head_),
        size_(other.size_),
        elapsed_(other.elapsed_),
        overdue_unsorted_(other.overdue_unsorted_),
        levels_(other.levels_),
        scratch_(std::move(other.scratch_)) {
    other.Reset();
  }
  TimingWheel& operator=(TimingWheel&& other) noexcept {
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
  ~TimingWheel() = default;

  // Insert()
  //
  // Adds a timer that fires at the first Advance() whose `now_tick` is >=
  // `deadline_tick`. A deadline <= now() fires on the next Advance(), even
  // Advance(now()). O(1); allocates only when the slab has to grow.
  TimerId Insert(uint64_t deadline_tick, T value) {
    const uint32_t index = Allocate();
    Entry& entry = entries_[index];
    new (&entry.value) T(std::move(value));
    entry.deadline = std::min(deadline_tick, kMaxTick);
    entry.lane = static_cast<uint8_t>(internal::WheelLaneFor(entry.deadline));
    Place(index);
    ++size_;
    return TimerId{index, entry.generation};
  }

  // Cancel()
  //
  // Removes a pending timer in O(1) and destroys its value. Returns false (and
  // does nothing) if the id already fired, was cancelled, or is invalid or
  // stale.
  bool Cancel(TimerId id) {
    if (id.index >= entries_.size()) return false;
    Entry& entry = entries_[id.index];
    if (!entry.in_use() || entry.generation != id.generation) return false;
    Unlink(id.index);
    entry.value.~T();
    Free(id.index);
    --size_;
    return true;
  }

  // Advance()
  //
  // Moves time to `now_tick` (an earlier value than now() is a no-op) and
  // calls `on_expire(T&&)` once for every timer whose deadline <= `now_tick`,
  // in non-decreasing deadline order; timers with equal deadlines fire in the
  // order they were inserted. Each timer is removed from the wheel before its
  // callback runs. Returns how many fired.
  //
  // REQUIRES: `on_expire` does not call into this wheel. Collect follow-up
  // work (re-arming a timer, say) and do it after Advance() returns.
  //
  // Deadlines above kMaxTick count as kMaxTick, and so does `now_tick`.
  //
  // Cost: O(timers fired + timers cascaded); each timer cascades at most
  // once per level, plus once per 2^36 ticks while its deadline is beyond the
  // wheel's span. When only such far timers are left and the jump spans more
  // than a full turn, the wheel re-sorts them at their earliest deadline
  // instead of turning the top level round once per 2^36 ticks.
  template <typename Fn>
  size_t Advance(uint64_t now_tick, Fn&& on_expire) {
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

  // NextExpiration()
  //
  // The earliest tick at which an Advance() may have something to do: fire a
  // timer, or cascade a higher-level slot. Never later than the earliest
  // pending deadline, and never earlier than now() (so an overdue timer
  // yields now()). std::nullopt when the wheel is empty. Costs a few bit
  // operations per level; no timer is looked at.
  //
  // A host loop sleeps until this tick and calls Advance(); when the tick
  // turns out to be a cascade point, nothing fires and the next call gives a
  // later tick.
  std::optional<uint64_t> NextExpiration() const {
    const std::optional<Due> due = NextDue();
    if (!due.has_value()) return std::nullopt;
    return due->tick;
  }

  // The wheel's time: the largest tick passed to Advance() or the
  // constructor.
  uint64_t now() const { return elapsed_; }

  // Number of pending timers.
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // MemoryUsage()
  //
  // Bytes held by the wheel: the object itself (with its slot arrays) plus the
  // slab's capacity. The slab keeps its peak size; freed entries are reused.
  size_t MemoryUsage() const {
    return sizeof(*this) + entries_.capacity() * sizeof(Entry) +
           scratch_.capacity() * sizeof(uint32_t);
  }

  // CheckInvariants()
  //
  // Walks every slot and verifies the wheel's internal structure: list links,
  // occupancy bits, the count, and that every timer sits in a slot that is
  // not processed before its deadline. O(slab size); for tests and debugging.
  bool CheckInvariants() const;

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  static constexpr uint8_t kFree = 0xFF;  // Entry::level of an unused entry.

  struct Entry {
    Entry() {}  // `value` is constructed by Insert().
    Entry(Entry&& other) noexcept(std::is_nothrow_move_constructible<T>::value)
        : deadline(other.deadline),
          prev(other.prev),
          next(other.next),
          generation(other.generation),
          level(other.level),
          slot(other.slot),
          lane(other.lane) {
      if (in_use()) new (&value) T(std::move(other.value));
    }
    Entry& operator=(Entry&&) = delete;
    ~Entry() {
      if (in_use()) value.~T();
    }

    bool in_use() const { return level != kFree; }

    uint64_t deadline = 0;
    uint32_t prev = kNil;  // In a slot list.
    uint32_t next = kNil;  // In a slot list, or the free list when unused.
    uint32_t generation = 0;
    uint8_t level = kFree;
    uint8_t slot = 0;
    uint8_t lane = 0;  // internal::WheelLaneFor(deadline), kept for Unlink().
    union {
      T value;  // Alive exactly while in_use().
    };
  };

  // An intrusive doubly-linked list of entries, by slab index.
  struct List {
    uint32_t head = kNil;
    uint32_t tail = kNil;
  };
  using Slot = std::array<List, internal::kWheelLanes>;

  struct Level {
    uint64_t occupied = 0;  // Bit s set <=> some list of slots[s] non-empty.
    std::array<Slot, internal::kWheelSlots> slots;
  };

  // The next slot to process and the tick at which it comes due.
  struct Due {
    int level;
    int slot;
    uint64_t tick;
  };

  void Reset() {
    entries_.clear();
    free_head_ = kNil;
    size_ = 0;
    overdue_unsorted_ = false;
    levels_ = {};
    scratch_.clear();
  }

  uint32_t Allocate() {
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
  void Free(uint32_t index) {
    Entry& entry = entries_[index];
    entry.level = kFree;
    ++entry.generation;
    entry.prev = kNil;
    entry.next = free_head_;
    free_head_ = index;
  }

  // Links entry `index` into the slot that matches its deadline at the
  // current time. An overdue timer goes to the current level-0 slot, which
  // Advance() processes first.
  void Place(uint32_t index) {
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
    Level& lv = levels_[level];
    List& list = lv.slots[slot][entry.lane];
    entry.next = kNil;
    entry.prev = list.tail;
    if (list.tail == kNil) {
      list.head = index;
      lv.occupied |= uint64_t{1} << slot;
    } else {
      entries_[list.tail].next = index;
    }
    list.tail = index;
  }

  void Unlink(uint32_t index) {
    Entry& entry = entries_[index];
    Level& lv = levels_[entry.level];
    Slot& slot = lv.slots[entry.slot];
    List& list = slot[entry.lane];
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
    if (list.head == kNil && IsEmpty(slot)) {
      lv.occupied &= ~(uint64_t{1} << entry.slot);
    }
  }

  static bool IsEmpty(const Slot& slot) {
    for (const List& list : slot) {
      if (list.head != kNil) return false;
    }
    return true;
  }

  // Detaches all lists of a slot and returns their heads.
  std::array<uint32_t, internal::kWheelLanes> TakeSlot(int level, int slot) {
    Level& lv = levels_[level];
    std::array<uint32_t, internal::kWheelLanes> heads;
    for (int lane = 0; lane < internal::kWheelLanes; ++lane) {
      heads[lane] = lv.slots[slot][lane].head;
      lv.slots[slot][lane] = List();
    }
    lv.occupied &= ~(uint64_t{1} << slot);
    return heads;
  }

  // Appends the entries of a taken slot to scratch_, list by list.
  void Gather(const std::array<uint32_t, internal::kWheelLanes>& heads) {
    for (uint32_t index : heads) {
      for (; index != kNil; index = entries_[index].next) {
        scratch_.push_back(index);
      }
    }
  }

  void Prefetch(uint32_t index) const {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(&entries_[index]);
#endif
  }

  // The first occupied level holds the earliest slot: every slot of a level
  // below lies inside the current slot of the levels above it.
  std::optional<Due> NextDue() const {
    for (int level = 0; level < internal::kWheelLevels; ++level) {
      const uint64_t occupied = levels_[level].occupied;
      if (occupied == 0) continue;
      const int current = internal::WheelSlotFor(elapsed_, level);
      // On level 0 the current slot holds timers due now. Above it, the
      // current slot is behind us: only far timers parked on the top level
      // can be there, and their slot comes round again one full turn later
      // (distance 64), after every other slot of the level.
      const int skip = level == 0 ? 0 : 1;
      const int distance =
          skip + internal::WheelDistanceToOccupied(
                     occupied, (current + skip) % internal::kWheelSlots);
      const uint64_t range = internal::WheelSlotRange(level);
      const uint64_t tick = (elapsed_ & ~(range - 1)) + distance * range;
      // Below the top level, timers always sit ahead of the current slot.
      assert(level == internal::kWheelTopLevel ||
             current + distance < internal::kWheelSlots);
      return Due{level, (current + distance) % internal::kWheelSlots, tick};
    }
    return std::nullopt;
  }

  // Fires every timer in level-0 slot `slot`, which is due now. Outside the
  // overdue case all of them share one deadline, hence one list.
  template <typename Fn>
  size_t Fire(int slot, Fn& on_expire) {
    const std::array<uint32_t, internal::kWheelLanes> heads = TakeSlot(0, slot);
    if (overdue_unsorted_) {
      // Timers inserted with a deadline in the past share this slot with
      // those due exactly now; put them in deadline order. Equal deadlines
      // share a list, so a stable sort keeps their insertion order.
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

  template <typename Fn>
  void FireOne(uint32_t index, Fn& on_expire) {
    Entry& entry = entries_[index];
    assert(entry.deadline <= elapsed_);
    T value(std::move(entry.value));
    entry.value.~T();
    Free(index);
    --size_;
    on_expire(std::move(value));
  }

  // Re-sorts the timers of a higher-level slot whose start has come. The
  // slot's lists are walked in turns, one entry of each per round, with the
  // next entry of each list prefetched a round ahead.
  void Cascade(int level, int slot) {
    std::array<uint32_t, internal::kWheelLanes> cursor = TakeSlot(level, slot);
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
  // turn: jump straight to the earliest of their deadlines (or `now_tick`)
  // and re-sort them all there, instead of turning the top level round once
  // per 2^36 ticks.
  void Rebase(uint64_t now_tick) {
    scratch_.clear();
    for (int slot = 0; slot < internal::kWheelSlots; ++slot) {
      Gather(TakeSlot(internal::kWheelTopLevel, slot));
    }
    uint64_t target = now_tick;
    for (const uint32_t index : scratch_) {
      target = std::min(target, entries_[index].deadline);
    }
    assert(target >= elapsed_);
    elapsed_ = target;
    for (const uint32_t index : scratch_) Place(index);
  }

  std::vector<Entry> entries_;
  uint32_t free_head_ = kNil;
  size_t size_ = 0;
  uint64_t elapsed_;
  // Set when a timer was inserted with a deadline before elapsed_.
  bool overdue_unsorted_ = false;
  std::array<Level, internal::kWheelLevels> levels_;
  std::vector<uint32_t> scratch_;  // Reused by Fire() and Rebase().
};

template <typename T>
bool TimingWheel<T>::CheckInvariants() const {
  size_t linked = 0;
  for (int level = 0; level < internal::kWheelLevels; ++level) {
    const Level& lv = levels_[level];
    const uint64_t range = internal::WheelSlotRange(level);
    const int current = internal::WheelSlotFor(elapsed_, level);
    for (int slot = 0; slot < internal::kWheelSlots; ++slot) {
      const bool bit = (lv.occupied >> slot) & 1;
      if (bit == IsEmpty(lv.slots[slot])) return false;
      // The tick at which this slot is processed next (as in NextDue()).
      const int distance =
          (slot - current + internal::kWheelSlots) % internal::kWheelSlots;
      uint64_t start = (elapsed_ & ~(range - 1)) + distance * range;
      if (level > 0 && distance == 0) start += internal::kWheelRange;
      for (int lane = 0; lane < internal::kWheelLanes; ++lane) {
        const List& list = lv.slots[slot][lane];
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

#endif  // DELAYQ_TIMING_WHEEL_H_
