// The timing wheel against the two usual alternatives, at 1 thousand to 1
// million pending timers:
//   * a binary heap (std::priority_queue) with lazy cancel: a cancelled
//     timer stays in the heap as a tombstone, recognised by a generation
//     check when it reaches the top; the heap is compacted when tombstones
//     outnumber live timers, so memory and heap depth stay bounded;
//   * an ordered map (std::multimap), cancelled by iterator.
//
// Workloads (deadlines uniform over 1..2^20 ticks ahead, about 17 minutes at
// 1 ms; one random stream, identical for every queue):
//   BM_InsertCancel  cancel a random pending timer and insert a new one;
//                    one iteration = one insert + one cancel.
//   BM_InsertExpire  steady state of a host loop: jump to the next expiration,
//                    fire what is due, insert a new timer for each one fired;
//                    items = timers fired (and re-inserted).
//   BM_Fill          insert n timers into an empty queue; reports memory.
// Every benchmark reports bytes_per_timer: bytes held by the queue divided by
// the pending timers (allocator requests only; malloc's own headers and
// rounding are not counted, for any queue).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "benchmark/benchmark.h"
#include "delayq/timing_wheel.h"

namespace delayq {
namespace {

constexpr uint64_t kMaxDelay = uint64_t{1} << 20;

// xorshift64*: cheap enough not to dominate the measured operations.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1DULL;
  }
  // Uniform in [0, n).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >>
                                 64);
  }

 private:
  uint64_t state_;
};

class WheelQueue {
 public:
  using Handle = TimerId;

  Handle Insert(uint64_t deadline, uint64_t value) {
    return wheel_.Insert(deadline, value);
  }
  void Cancel(Handle handle) { wheel_.Cancel(handle); }
  template <typename Fn>
  size_t Advance(uint64_t now, Fn&& on_expire) {
    return wheel_.Advance(now, on_expire);
  }
  std::optional<uint64_t> Next() const { return wheel_.NextExpiration(); }
  size_t Bytes() const { return wheel_.MemoryUsage(); }

 private:
  TimingWheel<uint64_t> wheel_;
};

class HeapQueue {
 public:
  struct Handle {
    uint32_t index;
    uint32_t generation;
  };

  Handle Insert(uint64_t deadline, uint64_t value) {
    uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      index = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    Slot& slot = slots_[index];
    slot.value = value;
    heap_.push(Node{deadline, index, slot.generation});
    ++live_;
    return Handle{index, slot.generation};
  }

  void Cancel(Handle handle) {
    if (slots_[handle.index].generation != handle.generation) return;
    Release(handle.index);
    if (heap_.size() > 2 * live_ + 64) {
      heap_.Compact([this](const Node& n) { return Live(n); });
    }
  }

  template <typename Fn>
  size_t Advance(uint64_t now, Fn&& on_expire) {
    size_t fired = 0;
    while (!heap_.empty() && heap_.top().deadline <= now) {
      const Node node = heap_.top();
      heap_.pop();
      if (!Live(node)) continue;  // A tombstone.
      uint64_t value = slots_[node.index].value;
      Release(node.index);
      on_expire(std::move(value));
      ++fired;
    }
    return fired;
  }

  std::optional<uint64_t> Next() {
    while (!heap_.empty() && !Live(heap_.top())) heap_.pop();
    if (heap_.empty()) return std::nullopt;
    return heap_.top().deadline;
  }

  size_t Bytes() const {
    return sizeof(*this) + heap_.capacity() * sizeof(Node) +
           slots_.capacity() * sizeof(Slot) +
           free_.capacity() * sizeof(uint32_t);
  }

 private:
  struct Node {
    uint64_t deadline;
    uint32_t index;
    uint32_t generation;
  };
  struct Later {
    bool operator()(const Node& a, const Node& b) const {
      return a.deadline > b.deadline;
    }
  };
  // std::priority_queue, with access to its vector for compaction.
  class Heap : public std::priority_queue<Node, std::vector<Node>, Later> {
   public:
    template <typename Keep>
    void Compact(Keep keep) {
      c.erase(std::remove_if(c.begin(), c.end(),
                             [&](const Node& n) { return !keep(n); }),
              c.end());
      std::make_heap(c.begin(), c.end(), comp);
    }
    size_t capacity() const { return c.capacity(); }
  };
  struct Slot {
    uint64_t value = 0;
    uint32_t generation = 0;
  };

  bool Live(const Node& node) const {
    return slots_[node.index].generation == node.generation;
  }
  void Release(uint32_t index) {
    ++slots_[index].generation;
    free_.push_back(index);
    --live_;
  }

  Heap heap_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  size_t live_ = 0;
};

// Counts the bytes a container asks its allocator for.
template <typename T>
struct CountingAllocator {
  using value_type = T;
  explicit CountingAllocator(size_t* bytes) : bytes(bytes) {}
  template <typename U>
  CountingAllocator(const CountingAllocator<U>& other) : bytes(other.bytes) {}
  T* allocate(size_t n) {
    *bytes += n * sizeof(T);
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) {
    *bytes -= n * sizeof(T);
    std::allocator<T>().deallocate(p, n);
  }
  template <typename U>
  bool operator==(const CountingAllocator<U>& other) const {
    return bytes == other.bytes;
  }
  template <typename U>
  bool operator!=(const CountingAllocator<U>& other) const {
    return bytes != other.bytes;
  }
  size_t* bytes;
};

class MapQueue {
 public:
  using Map =
      std::multimap<uint64_t, uint64_t, std::less<uint64_t>,
                    CountingAllocator<std::pair<const uint64_t, uint64_t>>>;
  using Handle = Map::iterator;

  MapQueue() : map_(Map::allocator_type(&bytes_)) {}
  MapQueue(const MapQueue&) = delete;
  MapQueue& operator=(const MapQueue&) = delete;

  Handle Insert(uint64_t deadline, uint64_t value) {
    return map_.emplace(deadline, value);
  }
  void Cancel(Handle handle) { map_.erase(handle); }
  template <typename Fn>
  size_t Advance(uint64_t now, Fn&& on_expire) {
    size_t fired = 0;
    while (!map_.empty() && map_.begin()->first <= now) {
      uint64_t value = map_.begin()->second;
      map_.erase(map_.begin());
      on_expire(std::move(value));
      ++fired;
    }
    return fired;
  }
  std::optional<uint64_t> Next() const {
    if (map_.empty()) return std::nullopt;
    return map_.begin()->first;
  }
  size_t Bytes() const { return sizeof(*this) + bytes_; }

 private:
  size_t bytes_ = 0;
  Map map_;
};

template <typename Q>
void Fill(Q& queue, std::vector<typename Q::Handle>& handles, size_t n,
          Rng& rng) {
  handles.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    handles.push_back(queue.Insert(1 + rng.Below(kMaxDelay), i));
  }
}

template <typename Q>
void BM_InsertCancel(benchmark::State& state) {
  const size_t n = state.range(0);
  Rng rng(n);
  Q queue;
  std::vector<typename Q::Handle> handles;
  Fill(queue, handles, n, rng);
  uint64_t value = n;
  for (auto _ : state) {
    const size_t k = rng.Below(n);
    queue.Cancel(handles[k]);
    handles[k] = queue.Insert(1 + rng.Below(kMaxDelay), value++);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["bytes_per_timer"] = static_cast<double>(queue.Bytes()) / n;
}

template <typename Q>
void BM_InsertExpire(benchmark::State& state) {
  const size_t n = state.range(0);
  Rng rng(n);
  Q queue;
  {
    std::vector<typename Q::Handle> handles;
    Fill(queue, handles, n, rng);
  }
  std::vector<uint64_t> fired;
  fired.reserve(1024);
  int64_t expired = 0;
  for (auto _ : state) {
    const uint64_t now = *queue.Next();
    queue.Advance(now, [&](uint64_t&& value) { fired.push_back(value); });
    for (const uint64_t value : fired) {
      queue.Insert(now + 1 + rng.Below(kMaxDelay), value);
    }
    expired += fired.size();
    fired.clear();
  }
  state.SetItemsProcessed(expired);
  // CPU time per fired (and re-inserted) timer.
  state.counters["time_per_timer"] = benchmark::Counter(
      static_cast<double>(expired),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["bytes_per_timer"] = static_cast<double>(queue.Bytes()) / n;
}

template <typename Q>
void BM_Fill(benchmark::State& state) {
  const size_t n = state.range(0);
  size_t bytes = 0;
  for (auto _ : state) {
    Rng rng(n);
    Q queue;
    std::vector<typename Q::Handle> handles;
    Fill(queue, handles, n, rng);
    bytes = queue.Bytes();
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["bytes_per_timer"] = static_cast<double>(bytes) / n;
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {1'000, 10'000, 100'000, 1'000'000}) b->Arg(n);
}

BENCHMARK_TEMPLATE(BM_InsertCancel, WheelQueue)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_InsertCancel, HeapQueue)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_InsertCancel, MapQueue)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_InsertExpire, WheelQueue)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_InsertExpire, HeapQueue)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_InsertExpire, MapQueue)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_Fill, WheelQueue)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_Fill, HeapQueue)->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_Fill, MapQueue)->Apply(Sizes);

}  // namespace
}  // namespace delayq
