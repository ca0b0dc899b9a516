// Copyright delayq authors.

#include "backends/sqlite/internal/group_commit.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <utility>

namespace delayq {
namespace sqlite_internal {
namespace {

// Reads of a waiter's word between two yields of its core.
constexpr int kPollsPerYield = 64;

// Tells the core that this thread is polling (it eases the other thread
// of a hyper-threaded core).
inline void PollPause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

absl::Status GroupCommit::Run(absl::FunctionRef<absl::Status()> body) {
  Op op(body);
  RunAll(absl::MakeSpan(&op, 1));
  return std::move(op.result);
}

void GroupCommit::RunAll(absl::Span<Op> ops) {
  Waiter self(ops);
  bool lead;
  {
    internal::MutexLock lock(&mu_);
    queue_.push_back(&self);
    lead = !leading_;
    leading_ = true;
    if (gathering_ && queue_.size() >= last_callers_) gathered_.Signal();
  }
  if (!lead) lead = AwaitTold(&self) == kLead;
  if (lead) Lead(&self);
}

void GroupCommit::Lead(Waiter* self) {
  for (int led = 1;; ++led) {
    const std::vector<Waiter*> group = RunQueued(/*gather=*/led == 1);
    Waiter* next = nullptr;
    bool again = false;
    {
      internal::MutexLock lock(&mu_);
      if (queue_.empty()) {
        leading_ = false;
      } else if (led < kGroupsPerLead) {
        again = true;
      } else {
        next = queue_.front();
      }
    }
    // The next leader first: the store is idle until it runs.
    if (next != nullptr) Tell(next, kLead);
    for (Waiter* w : group) {
      if (w != self) Tell(w, kDone);
    }
    if (!again) return;
  }
}

std::vector<GroupCommit::Waiter*> GroupCommit::RunQueued(bool gather) {
  std::vector<Waiter*> group;
  {
    internal::MutexLock lock(&mu_);
    if (gather) Gather();
    group.swap(queue_);
  }
  std::vector<Op*> ops;
  ops.reserve(group.size());
  for (Waiter* w : group) {
    for (Op& op : w->ops) ops.push_back(&op);
  }
  run_(ops);
  internal::MutexLock lock(&mu_);
  ++groups_;
  ops_ += static_cast<int64_t>(ops.size());
  last_callers_ = group.size();
  return group;
}

void GroupCommit::Gather() {
  if (last_callers_ < kGatherFrom || queue_.size() >= last_callers_) return;
  gathering_ = true;
  const auto deadline = std::chrono::steady_clock::now() + gather_;
  while (queue_.size() < last_callers_) {
    if (!gathered_.WaitUntil(&mu_, deadline)) break;
  }
  gathering_ = false;
}

void GroupCommit::Tell(Waiter* w, Told what) {
  // A waiter still polling sees the word change; only a sleeping one needs
  // the system call.
  if (w->told.exchange(what, std::memory_order_acq_rel) != kAsleep) return;
  // Once `told` is stored the waiter may return and its Waiter go away: the
  // wake names the address only. Waking a word that another sleeper took
  // over since is a spurious wake-up for it, which every futex user
  // (AwaitTold() too) expects.
  syscall(SYS_futex, &w->told, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

GroupCommit::Told GroupCommit::AwaitTold(Waiter* w) {
  const auto sleep_after = std::chrono::steady_clock::now() + kSpin;
  do {
    for (int i = 0; i < kPollsPerYield; ++i) {
      const uint32_t told = w->told.load(std::memory_order_acquire);
      if (told != kWaiting) return static_cast<Told>(told);
      PollPause();
    }
    sched_yield();
  } while (std::chrono::steady_clock::now() < sleep_after);
  uint32_t told = kWaiting;
  if (!w->told.compare_exchange_strong(told, kAsleep,
                                       std::memory_order_acq_rel)) {
    return static_cast<Told>(told);  // told while deciding to sleep
  }
  for (;;) {
    // Sleeps only while the word still says kAsleep.
    syscall(SYS_futex, &w->told, FUTEX_WAIT_PRIVATE, kAsleep, nullptr, nullptr,
            0);
    told = w->told.load(std::memory_order_acquire);
    if (told != kAsleep) return static_cast<Told>(told);
  }
}

GroupCommit::State GroupCommit::StateForTest() {
  internal::MutexLock lock(&mu_);
  State state;
  state.leading = leading_;
  state.gathering = gathering_;
  state.queued = queue_.size();
  state.groups = groups_;
  state.ops = ops_;
  return state;
}

}  // namespace sqlite_internal
}  // namespace delayq
