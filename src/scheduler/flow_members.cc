// Copyright delayq authors.

#include "src/scheduler/flow_members.h"

#include <deque>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace internal {
absl::StatusOr<std::vector<std::string>> UnfinishedFlow(
    absl::string_view id,
    absl::FunctionRef<absl::StatusOr<Job>(absl::string_view)> get) {
  absl::StatusOr<Job> root = get(id);
  if (!root.ok()) return root.status();
  if (IsFinished(root->state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("job '", id, "' has finished (", JobStateName(root->state),
                     "): its flow has nothing left to cancel"));
  }
  std::vector<std::string> out = {std::string(id)};
  absl::flat_hash_set<std::string> seen = {std::string(id)};
  std::deque<std::vector<std::string>> pending = {root->after};
  while (!pending.empty()) {
    const std::vector<std::string> after = std::move(pending.front());
    pending.pop_front();
    for (const std::string& dependency : after) {
      if (!seen.insert(dependency).second) continue;
      absl::StatusOr<Job> job = get(dependency);
      if (absl::IsNotFound(job.status())) continue;
      if (!job.ok()) return job.status();
      if (IsFinished(job->state)) continue;
      out.push_back(dependency);
      if (!job->after.empty()) pending.push_back(job->after);
    }
  }
  return out;
}

}  // namespace internal
}  // namespace delayq
