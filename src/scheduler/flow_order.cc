// Copyright delayq authors.

#include "src/scheduler/flow_order.h"

#include <functional>
#include <queue>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace delayq {
namespace internal {

absl::StatusOr<std::vector<size_t>> FlowOrder(absl::Span<const NewJob> jobs) {
  absl::flat_hash_map<std::string, size_t> index_of;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!index_of.emplace(jobs[i].id, i).second) {
      return absl::AlreadyExistsError(
          absl::StrCat("job id '", jobs[i].id, "' appears twice in the flow"));
    }
  }
  // Kahn's algorithm, taking the lowest ready index first so that jobs
  // that do not wait for each other keep the order given.
  std::vector<int> waits_for(jobs.size(), 0);
  std::vector<std::vector<size_t>> dependants(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    for (const std::string& id : jobs[i].after) {
      auto it = index_of.find(id);
      if (it == index_of.end()) continue;  // in the store, or nowhere
      ++waits_for[i];
      dependants[it->second].push_back(i);
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (waits_for[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  order.reserve(jobs.size());
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t d : dependants[i]) {
      if (--waits_for[d] == 0) ready.push(d);
    }
  }
  if (order.size() < jobs.size()) {
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (waits_for[i] > 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the flow's jobs wait for each other in a cycle (job '", jobs[i].id,
            "' is in one or waits for one)"));
      }
    }
  }
  return order;
}

}  // namespace internal
}  // namespace delayq
