// Copyright delayq authors.

#include "backends/sqlite/internal/group_commit.h"

#include <utility>

namespace delayq {
namespace sqlite_internal {

absl::Status GroupCommit::Run(absl::FunctionRef<absl::Status()> body) {
  Waiter self(body);
  mu_.Lock();
  queue_.push_back(&self);
  while (!self.done && (leading_ || queue_.front() != &self)) {
    self.wake.Wait(&mu_);
  }
  if (!self.done) Lead(&self);
  absl::Status result = std::move(self.op.result);
  mu_.Unlock();
  return result;
}

void GroupCommit::Lead(Waiter* self) {
  leading_ = true;
  std::vector<Waiter*> group;
  group.swap(queue_);
  std::vector<Op*> ops;
  ops.reserve(group.size());
  for (Waiter* w : group) ops.push_back(&w->op);
  ++groups_;
  ops_ += static_cast<int64_t>(ops.size());
  mu_.Unlock();
  run_(ops);
  mu_.Lock();
  leading_ = false;
  // Signalled under the lock: a waiter that sees `done` returns and its
  // Waiter goes away with it.
  for (Waiter* w : group) {
    w->done = true;
    if (w != self) w->wake.Signal();
  }
  if (!queue_.empty()) queue_.front()->wake.Signal();
}

GroupCommit::State GroupCommit::StateForTest() {
  internal::MutexLock lock(&mu_);
  State state;
  state.leading = leading_;
  state.queued = queue_.size();
  state.groups = groups_;
  state.ops = ops_;
  return state;
}

}  // namespace sqlite_internal
}  // namespace delayq
