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
// The machinery (the wheel's arithmetic, a level's slots and bitmap, a slab
// entry, the algorithms) lives in delayq/internal/, included below.
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
#include <vector>

#include "delayq/internal/wheel_entry.h"
#include "delayq/internal/wheel_geometry.h"
#include "delayq/internal/wheel_level.h"
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
  TimerId Insert(uint64_t deadline_tick, T value);

  // Cancel()
  //
  // Removes a pending timer in O(1) and destroys its value. Returns false (and
  // does nothing) if the id already fired, was cancelled, or is invalid or
  // stale.
  bool Cancel(TimerId id);

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
  size_t Advance(uint64_t now_tick, Fn&& on_expire);

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
  // constructor.
  uint64_t now() const { return elapsed_; }

  // Number of pending timers.
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // MemoryUsage()
  //
  // Bytes held by the wheel: the object itself (with its slot arrays) plus the
  // slab's capacity. The slab keeps its peak size; freed entries are reused.
  size_t MemoryUsage() const;

  // CheckInvariants()
  //
  // Walks every slot and verifies the wheel's internal structure: list links,
  // occupancy bits, the count, and that every timer sits in a slot that is
  // not processed before its deadline. O(slab size); for tests and debugging.
  bool CheckInvariants() const;

 private:
  using Entry = internal::WheelEntry<T>;
  static constexpr uint32_t kNil = internal::kWheelNil;

  // The next slot to process and the tick at which it comes due.
  struct Due {
    int level;
    int slot;
    uint64_t tick;
  };

  // The algorithms, in delayq/internal/timing_wheel_impl.h.
  void Reset();
  uint32_t Allocate();
  void Free(uint32_t index);
  void Place(uint32_t index);
  void Unlink(uint32_t index);
  void Gather(const internal::WheelLanes& heads);
  void Prefetch(uint32_t index) const;
  std::optional<Due> NextDue() const;
  template <typename Fn>
  size_t Fire(int slot, Fn& on_expire);
  template <typename Fn>
  void FireOne(uint32_t index, Fn& on_expire);
  void Cascade(int level, int slot);
  void Rebase(uint64_t now_tick);

  std::vector<Entry> entries_;  // The slab.
  uint32_t free_head_ = kNil;
  size_t size_ = 0;
  uint64_t elapsed_;
  // Set when a timer was inserted with a deadline before elapsed_.
  bool overdue_unsorted_ = false;
  std::array<internal::WheelLevel, internal::kWheelLevels> levels_;
  std::vector<uint32_t> scratch_;  // Reused by Fire() and Rebase().
};

}  // namespace delayq

#include "delayq/internal/timing_wheel_impl.h"  // IWYU pragma: export

#endif  // DELAYQ_TIMING_WHEEL_H_
