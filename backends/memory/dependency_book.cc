// Copyright delayq authors.

#include "backends/memory/dependency_book.h"

#include <utility>

namespace delayq {
namespace memory_internal {

void DependencyBook::Hold(absl::string_view waiter,
                          absl::Span<const std::string> pending,
                          DependencyFailure policy) {
  Waiter& w = waiters_[std::string(waiter)];
  w.policy = policy;
  for (const std::string& dependency : pending) {
    w.pending.insert(dependency);
    dependants_[dependency].insert(std::string(waiter));
  }
}

std::vector<DependencyBook::Verdict> DependencyBook::Settle(
    absl::string_view dependency, bool met) {
  std::vector<Verdict> verdicts;
  auto list = dependants_.find(dependency);
  if (list == dependants_.end()) return verdicts;
  const absl::flat_hash_set<std::string> waiting = std::move(list->second);
  dependants_.erase(list);
  for (const std::string& id : waiting) {
    auto it = waiters_.find(id);
    if (it == waiters_.end()) continue;
    Waiter& w = it->second;
    if (met || w.policy == DependencyFailure::kRun) {
      w.pending.erase(dependency);
      if (!w.pending.empty()) continue;
      waiters_.erase(it);
      verdicts.push_back({Verdict::Kind::kRelease, id});
      continue;
    }
    const Verdict::Kind kind = w.policy == DependencyFailure::kFail
                                   ? Verdict::Kind::kFail
                                   : Verdict::Kind::kCancel;
    w.pending.erase(dependency);
    Forget(id);
    verdicts.push_back({kind, id});
  }
  return verdicts;
}

void DependencyBook::Remember(absl::string_view job,
                              absl::Span<const std::string> after) {
  after_[std::string(job)].assign(after.begin(), after.end());
}

absl::Span<const std::string> DependencyBook::After(
    absl::string_view job) const {
  auto it = after_.find(job);
  if (it == after_.end()) return {};
  return it->second;
}

void DependencyBook::Forget(absl::string_view waiter) {
  auto it = waiters_.find(waiter);
  if (it == waiters_.end()) return;
  for (const std::string& dependency : it->second.pending) {
    auto list = dependants_.find(dependency);
    if (list == dependants_.end()) continue;
    list->second.erase(waiter);
    if (list->second.empty()) dependants_.erase(list);
  }
  waiters_.erase(it);
}

}  // namespace memory_internal
}  // namespace delayq
