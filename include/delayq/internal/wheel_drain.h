// Copyright delayq authors.
//
// WheelDrain — the timers a TimingWheel's time has reached (timing_wheel.h),
// in their exact order, until they fire or are taken.
//
// A slot holds timers in lists, in no order but their ticks. Once the wheel's
// time reaches a level-0 slot, its timers are put in exact order here: by
// key (a deadline, or whatever finer order a wheel's policy gives), equal
// keys in the order they came. They come in two ways:
//   * the run: a whole slot at once, sorted once and taken from its front;
//   * late: one by one, a timer inserted at or before the wheel's time while
//     the run is still being taken from; kept in a B-tree, so many of them
//     (a wheel whose time ran ahead to a far timer, then got many nearer
//     ones) cost O(log n) each, never a shift of the run per timer.
// Each timer gets a number as it comes (the run's in list order, then the
// late ones), which orders equal keys and lets a timer be found again: the
// wheel keeps it in the timer's entry (WheelEntry::drain_order()).
// A drained run gives its memory back: most runs are a timer or two, held
// inline, and a wheel between calls holds no run it does not need.
// Internal: not part of the API.

#ifndef DELAYQ_INTERNAL_WHEEL_DRAIN_H_
#define DELAYQ_INTERNAL_WHEEL_DRAIN_H_

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>

#include "absl/container/btree_set.h"
#include "absl/container/inlined_vector.h"

namespace delayq {
namespace internal {

template <typename Key>
class WheelDrain {
 public:
  // One timer: its key, its number, and its entry in the wheel's slab.
  struct Item {
    Key key;
    uint64_t order;
    uint32_t index;
  };
  // Timers bound for the run, as a cascade finds them.
  using Items = absl::InlinedVector<Item, 1>;

  struct Before {
    bool operator()(const Item& a, const Item& b) const {
      if (a.key < b.key) return true;
      if (b.key < a.key) return false;
      return a.order < b.order;
    }
  };

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  // The number for the next timer that comes.
  uint64_t NextOrder() { return next_order_++; }

  // Makes `items` (numbered by NextOrder() as they came) the run, in exact
  // order. REQUIRES: empty().
  void StartRun(Items& items) {
    assert(empty());
    if (!std::is_sorted(items.begin(), items.end(), Before())) {
      std::sort(items.begin(), items.end(), Before());
    }
    run_.swap(items);
    run_pos_ = 0;
    size_ = run_.size();
    items.clear();
  }

  // Adds one timer, numbered by NextOrder().
  void Add(const Item& item) {
    if (size_++ == 0) {
      run_.clear();
      run_pos_ = 0;
      run_.push_back(item);
    } else {
      late_.insert(item);
    }
  }

  // The earliest timer. REQUIRES: !empty().
  const Item& front() const {
    if (late_.empty()) return run_[run_pos_];
    if (RunEmpty() || Before()(*late_.begin(), run_[run_pos_])) {
      return *late_.begin();
    }
    return run_[run_pos_];
  }

  // Removes the earliest timer. REQUIRES: !empty().
  void PopFront() { Erase(front()); }

  // Removes `item`. REQUIRES: it is here.
  void Erase(Item item) {
    --size_;
    if (!RunEmpty() && run_[run_pos_].index == item.index) {
      ++run_pos_;
    } else if (late_.erase(item) == 0) {
      auto it =
          std::lower_bound(run_.begin() + run_pos_, run_.end(), item, Before());
      assert(it != run_.end() && it->index == item.index);
      run_.erase(it);
    }
    if (RunEmpty()) {
      run_.clear();
      run_pos_ = 0;
    }
  }

  // Calls `visit(item)` in order until it returns false; returns false if
  // it did.
  template <typename Visit>
  bool ForEachInOrder(Visit&& visit) const {
    size_t run = run_pos_;
    auto late = late_.begin();
    while (run < run_.size() || late != late_.end()) {
      const bool from_run = late == late_.end() ||
                            (run < run_.size() && Before()(run_[run], *late));
      if (!visit(from_run ? run_[run++] : *late++)) return false;
    }
    return true;
  }

  // Empties the drain (the wheel destroys what its entries hold).
  void Clear() {
    run_.clear();
    run_pos_ = 0;
    late_.clear();
    size_ = 0;
  }

  // Bytes held outside the object (the B-tree's nodes approximately).
  size_t HeapBytes() const {
    const size_t run = run_.capacity() > 1 ? run_.capacity() : 0;
    return (run + late_.size()) * sizeof(Item);
  }

 private:
  bool RunEmpty() const { return run_pos_ == run_.size(); }

  // The run in order; taken from run_pos_ on.
  Items run_;
  size_t run_pos_ = 0;
  absl::btree_set<Item, Before> late_;
  size_t size_ = 0;
  uint64_t next_order_ = 0;
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_INTERNAL_WHEEL_DRAIN_H_
