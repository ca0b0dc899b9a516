// Copyright delayq authors.
//
// timing_wheel.h — a hierarchical timing wheel: many timers, O(1) insert and
// cancel, and a cheap answer to "what is due next?".
//
// The memory store keeps its pending timers (delayed jobs, leases, expiries)
// in TimingWheels, and a program may use one on its own for its own timers
// (a game server's respawns, buffs and timeouts). The wheel counts time in
// integer ticks; the caller decides what a tick is and converts with
// TickConverter.
//
// Design (after Varghese & Lauck, "Hashed and Hierarchical Timing Wheels",
// and the wheel in tokio's runtime): 6 levels of 64 slots. A slot on level L
// covers 64^L ticks, so level 0 resolves single ticks and the wheel spans
// 64^6 = 2^36 ticks (about 2.2 years at 1 ms). Each level keeps a 64-bit
// occupancy bitmap, so the next occupied slot is found with a rotate and a
// count-trailing-zeros instead of a scan, and only its occupied slots take
// memory. Timers live in a slab (a vector plus a free list) and are chained
// by index into intrusive doubly-linked lists, so Insert and Cancel are O(1)
// and allocate nothing once the slab has grown to the peak number of
// pending timers. Each slot has four such lists, picked by a hash of the
// deadline, so that a cascade can walk them side by side and overlap their
// cache misses. Higher levels cascade lazily: the timers of a level-L slot
// are re-sorted into lower levels only when the wheel's time reaches the
// start of that slot. A timer farther away than the wheel's span is parked
// on the top level and re-cascaded each time its slot comes round, until its
// real deadline is in range; it never fires early.
//
// Order: timers fire in deadline order, and timers with equal deadlines in
// the order they were inserted. A policy (the second template parameter)
// may give a finer order than the tick: its timers carry a key of their own
// (a time in microseconds, then a sequence number, say), ticks are derived
// from keys, and the timers of the tick being fired are sorted by key. So a
// coarse tick keeps cascades few while the order stays exact.
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
// The machinery (the wheel's arithmetic, a level's slots and bitmap, a slab
// entry, the sorted timers of the current tick, the algorithms) lives in
// delayq/internal/, included below.
//
// Thread-safety: a TimingWheel is not thread-safe. Callers that share one
// between threads hold their own lock around every call. TickConverter
// (tick_converter.h, included here) is immutable and may be used from any
// thread.

#ifndef DELAYQ_TIMING_WHEEL_H_
#define DELAYQ_TIMING_WHEEL_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "delayq/internal/wheel_drain.h"
#include "delayq/internal/wheel_entry.h"
#include "delayq/internal/wheel_geometry.h"
#include "delayq/internal/wheel_level.h"
#include "delayq/internal/wheel_policy.h"
#include "delayq/tick_converter.h"  // IWYU pragma: export

namespace delayq {

// TimerId
//
// Identifies one inserted timer; cheap to copy. A default-constructed id is
// invalid. An id stays safe to use after its timer fired or was cancelled:
// the slab slot carries a generation counter, so a stale id never cancels a
// newer timer that reuses the same slot (unless 2^31 timers passed through
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

// Wheel policies
//
// A policy tells a TimingWheel<T, Policy> what it stores for each timer,
// how to read the timer's key and the key's tick. It provides:
//   using Stored = ...;                      // what a slab entry holds
//   using Key = ...;                         // ordered by operator<
//   static Key KeyOf(const Stored&);
//   static uint64_t TickOf(const Key&);      // <= kMaxTick
//   static T& ValueOf(Stored&);              // and a const overload
// Keys order timers exactly; TickOf must keep that order (a < b implies
// TickOf(a) <= TickOf(b)). Timers with equal keys keep insertion order.
// A key must not change while its timer is in the wheel. A policy whose
// KeyOf() reads memory outside the entry (a record the value points to)
// may also provide
//   static void Prefetch(const Stored&);     // start loading that memory
// which a cascade calls a round before it reads the key.

// DeadlineTimers: the default. Insert(deadline_tick, value) stores the
// deadline beside the value; the key is the deadline.
template <typename T>
struct DeadlineTimers {
  struct Stored {
    uint64_t deadline;
    T value;
  };
  using Key = uint64_t;
  static Key KeyOf(const Stored& stored) { return stored.deadline; }
  static uint64_t TickOf(Key key) { return key; }
  static T& ValueOf(Stored& stored) { return stored.value; }
  static const T& ValueOf(const Stored& stored) { return stored.value; }
};

// KeyedTimers: a base for policies whose values carry their own key
// (Insert(value)); nothing but the value is stored. Derive and add Key,
// KeyOf() and TickOf().
template <typename T>
struct KeyedTimers {
  using Stored = T;
  static T& ValueOf(T& value) { return value; }
  static const T& ValueOf(const T& value) { return value; }
};

// TimingWheel
//
// A set of pending timers, each carrying a value of type T, ordered by the
// policy's key (by default an integer deadline tick). T must be
// move-constructible; its move constructor should not throw.
template <typename T, typename Policy = DeadlineTimers<T>>
class TimingWheel {
 public:
  using Key = typename Policy::Key;

  // Deadlines and times above this are treated as this value.
  static constexpr uint64_t kMaxTick = internal::kWheelMaxTick;

  // Creates an empty wheel whose time is `now_tick`.
  explicit TimingWheel(uint64_t now_tick = 0);

  TimingWheel(const TimingWheel&) = delete;
  TimingWheel& operator=(const TimingWheel&) = delete;
  // Moving transfers every pending timer; the moved-from wheel is left empty
  // (its time unchanged) and usable.
  TimingWheel(TimingWheel&& other) noexcept;
  TimingWheel& operator=(TimingWheel&& other) noexcept;
  ~TimingWheel() = default;

  // Insert()
  //
  // Adds a timer that fires at the first Advance() whose `now_tick` is >=
  // `deadline_tick`. A deadline <= now() fires on the next Advance(), even
  // Advance(now()). O(1); allocates only when the slab has to grow.
  // REQUIRES: the default policy, DeadlineTimers<T>.
  TimerId Insert(uint64_t deadline_tick, T value);

  // The same for a policy whose values carry their key: the deadline is
  // TickOf(KeyOf(value)). REQUIRES: a KeyedTimers policy.
  TimerId Insert(T value);

  // Cancel()
  //
  // Removes a pending timer in O(1) (O(log n) for a timer of the tick being
  // taken from, see Front()) and destroys its value. Returns false (and does
  // nothing) if the id already fired, was cancelled, or is invalid or stale.
  bool Cancel(TimerId id);

  // Advance()
  //
  // Moves time to `now_tick` (an earlier value than now() is a no-op) and
  // calls `on_expire(T&&)` once for every timer whose deadline <= `now_tick`,
  // in key order; timers with equal keys fire in the order they were
  // inserted. Each timer is removed from the wheel before its callback
  // runs. Returns how many fired.
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
  size_t Advance(uint64_t now_tick, Fn&& on_expire);

  // Front()
  //
  // The earliest pending timer in key order (the first inserted among equal
  // keys), or null when the wheel is empty. Fires nothing; the pointer is
  // good until the next call that changes the wheel.
  //
  // A caller that takes timers in order (look at the front, cancel it) uses
  // this instead of Advance(). While the earliest timer stays, this is O(1).
  // Once it is gone, finding the next one moves the wheel's time forward to
  // that timer's tick (cascading on the way, as Advance() would, and sorting
  // the timers of that tick by key), so now() may run ahead of the caller's
  // clock. The order stays exact: a timer inserted later with an earlier
  // deadline joins the sorted timers of the current tick (O(log n)) and
  // comes first here. An Advance() to a tick before now() does nothing, as
  // ever; Restart() puts an emptied wheel back on the caller's clock.
  const T* Front();

  // ForEachInOrder()
  //
  // Calls `visit(const T&)` for the pending timers in key order until it
  // returns false. For listing: each slot on the way is sorted into a copy,
  // so the cost grows with the timers visited and the slots they sit in, not
  // with the wheel's size.
  template <typename Visit>
  void ForEachInOrder(Visit&& visit) const;

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
  std::optional<uint64_t> NextExpiration() const;

  // The wheel's time: the largest tick passed to Advance() or the
  // constructor, or reached by Front(), unless Restart() set it since.
  uint64_t now() const { return elapsed_; }

  // Restart()
  //
  // Sets the time of an empty wheel to `now_tick`, earlier or later than
  // now(), keeping its memory: a wheel that sat empty while its owner's
  // clock moved on (or that Front() moved ahead) starts again from the
  // owner's time. REQUIRES: empty().
  void Restart(uint64_t now_tick);

  // Number of pending timers.
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // MemoryUsage()
  //
  // Bytes held by the wheel: the object itself plus the slab's capacity, the
  // occupied slots' lists and the sorted timers of the current tick. The
  // slab keeps its peak size; freed entries are reused.
  size_t MemoryUsage() const;

  // CheckInvariants()
  //
  // Walks every slot and verifies the wheel's internal structure: list links,
  // occupancy bits, the count, that every timer sits where its deadline puts
  // it and in a slot that is not processed before its deadline, and the
  // sorted timers of the current tick. O(slab size); for tests and debugging.
  bool CheckInvariants() const;

 private:
  using Stored = typename Policy::Stored;
  using Entry = internal::WheelEntry<Stored>;
  using Drain = internal::WheelDrain<Key>;
  using Item = typename Drain::Item;
  static constexpr uint32_t kNil = internal::kWheelNil;
  // A wheel that has held this many timers is busy: its levels get room for
  // all their slots (see WheelLevel::Grow()).
  static constexpr size_t kBusy = 64;
  // Whether a key is its tick (the default policy): then the timers of a
  // level-0 slot, which share a tick and a list, are in order already.
  static constexpr bool kKeyIsTick =
      std::is_same<Policy, DeadlineTimers<T>>::value;

  // The next slot to process and the tick at which it comes due.
  struct Due {
    int level;
    int slot;
    uint64_t tick;
  };

  // The algorithms, in delayq/internal/timing_wheel_impl.h.
  void Reset();
  template <typename... Args>
  TimerId Emplace(Args&&... args);
  uint32_t Allocate();
  uint32_t GrowSlab();
  void GrowLevels();
  void AddToDrain(uint32_t index);
  void Free(uint32_t index);
  Key KeyAt(uint32_t index) const;
  uint64_t TickAt(uint32_t index) const;
  void Place(uint32_t index);
  void Link(uint32_t index, uint64_t tick);
  void Unlink(uint32_t index);
  Item DrainItem(uint32_t index);
  void FlushToDrain();
  void NoteFront(uint32_t index);
  void Prefetch(uint32_t index) const;
  std::optional<Due> NextDue() const;
  void Step(const Due& due);
  void MoveToFront();
  template <typename Fn>
  size_t FireDrain(Fn& on_expire);
  template <typename Fn>
  size_t FireSlot(int slot, Fn& on_expire);
  template <typename Fn>
  void FireOne(uint32_t index, Fn& on_expire);
  void Cascade(int level, int slot);
  void CascadePrefetchingKeys(const internal::WheelLanes& lanes);
  void Rebase(uint64_t now_tick);
  template <typename Visit>
  bool VisitSorted(std::vector<Item>& items, Visit& visit) const;
  void GatherItems(const internal::WheelLanes& lanes,
                   std::vector<Item>& items) const;
  bool CheckSlots(size_t* linked) const;
  bool CheckDrain() const;

  std::vector<Entry> entries_;  // The slab.
  uint32_t free_head_ = kNil;
  size_t size_ = 0;
  uint64_t elapsed_;
  // The earliest timer in the slots (not the drain), or kNil when that is
  // not known (a cascade moved timers, or the earliest was cancelled).
  uint32_t front_ = kNil;
  std::array<internal::WheelLevel, internal::kWheelLevels> levels_;
  // The timers whose tick the wheel's time has reached, in key order.
  Drain drain_;
  // Reused by cascades and Rebase(): timers bound for the drain, and
  // timers taken out of their slots.
  typename Drain::Items pending_;
  std::vector<uint32_t> scratch_;
};

}  // namespace delayq

#include "delayq/internal/timing_wheel_impl.h"  // IWYU pragma: export

#endif  // DELAYQ_TIMING_WHEEL_H_
