// Copyright delayq authors.

#include "backends/sqlite/internal/group_commit.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <utility>

namespace delayq {
namespace sqlite_internal {

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
  std::vector<Waiter*> group;
  {
    internal::MutexLock lock(&mu_);
    Gather();
    group.swap(queue_);
  }
  std::vector<Op*> ops;
  ops.reserve(group.size());
  for (Waiter* w : group) {
    for (Op& op : w->ops) ops.push_back(&op);
  }
  run_(ops);
  Waiter* next = nullptr;
  {
    internal::MutexLock lock(&mu_);
    ++groups_;
    ops_ += static_cast<int64_t>(ops.size());
    last_callers_ = group.size();
    if (queue_.empty()) {
      leading_ = false;
    } else {
      next = queue_.front();
    }
  }
  // The next group first: the store is idle until its leader runs.
  if (next != nullptr) Tell(next, kLead);
  for (Waiter* w : group) {
    if (w != self) Tell(w, kDone);
  }
}

void GroupCommit::Gather() {
  if (queue_.size() >= last_callers_) return;
  gathering_ = true;
  const auto deadline = std::chrono::steady_clock::now() + gather_;
  while (queue_.size() < last_callers_) {
    if (!gathered_.WaitUntil(&mu_, deadline)) break;
  }
  gathering_ = false;
}

void GroupCommit::Tell(Waiter* w, Told what) {
  w->told.store(what, std::memory_order_release);
  // Once `told` is stored the waiter may return and its Waiter go away: the
  // wake names the address only. Waking a word that another sleeper took
  // over since is a spurious wake-up for it, which every futex user
  // (AwaitTold() too) expects.
  syscall(SYS_futex, &w->told, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

GroupCommit::Told GroupCommit::AwaitTold(Waiter* w) {
  for (;;) {
    const uint32_t told = w->told.load(std::memory_order_acquire);
    if (told != kWaiting) return static_cast<Told>(told);
    // Sleeps only while the word still says kWaiting.
    syscall(SYS_futex, &w->told, FUTEX_WAIT_PRIVATE, kWaiting, nullptr, nullptr,
            0);
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
