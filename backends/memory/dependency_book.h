// Copyright delayq authors.
//
// DependencyBook — which waiting jobs of the memory store wait for which
// jobs (JobOptions::after), by id; and, for the life of each job with
// dependencies, which jobs it named (their results go with its leases).
//
// Kept by id rather than by record: Replace() swaps a job's record, and a
// job that others wait for may be replaced. Only jobs with dependencies
// pay for it; the records themselves stay the size they were.
//
// Not thread-safe: the store's mutex guards it.

#ifndef DELAYQ_BACKENDS_MEMORY_DEPENDENCY_BOOK_H_
#define DELAYQ_BACKENDS_MEMORY_DEPENDENCY_BOOK_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "delayq/job.h"

namespace delayq {
namespace memory_internal {

class DependencyBook {
 public:
  // What becomes of one waiting job when a dependency of it is settled.
  struct Verdict {
    enum class Kind {
      kRelease,  // its last pending dependency was met: it may run
      kFail,     // the dependency failed and its policy is kFail
      kCancel,   // the dependency failed and its policy is kCancel
    };
    Kind kind;
    std::string waiter;
  };

  // Records that `waiter` waits for each of `pending` (none empty).
  void Hold(absl::string_view waiter, absl::Span<const std::string> pending,
            DependencyFailure policy);

  // Settles every job that waits for `dependency`: met (acknowledged), or
  // not (dead, or gone unacknowledged). A waiter whose policy is kRun counts
  // a failed dependency as met. Every waiter that is no longer waiting
  // afterwards (released, failed or cancelled) is forgotten, and comes back
  // in a verdict; one that still waits for others does not.
  std::vector<Verdict> Settle(absl::string_view dependency, bool met);

  // Forgets `waiter` (cancelled, or failed by a dependency): no dependency
  // of it will settle it.
  void Forget(absl::string_view waiter);

  // Records the jobs `job` names in `after`, until Drop().
  void Remember(absl::string_view job, absl::Span<const std::string> after);
  // The jobs `job` named, or none.
  absl::Span<const std::string> After(absl::string_view job) const;
  // Forgets what `job` named (it left the store).
  void Drop(absl::string_view job) { after_.erase(job); }

  // Whether any job waits for `dependency`.
  bool HasDependants(absl::string_view dependency) const {
    return dependants_.contains(dependency);
  }

 private:
  struct Waiter {
    absl::flat_hash_set<std::string> pending;
    DependencyFailure policy = DependencyFailure::kFail;
  };

  // Waiting job -> what it still waits for.
  absl::flat_hash_map<std::string, Waiter> waiters_;
  // Dependency -> the waiting jobs that wait for it.
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>>
      dependants_;
  // Job -> the jobs it named in JobOptions::after, while it lives.
  absl::flat_hash_map<std::string, std::vector<std::string>> after_;
};

}  // namespace memory_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_MEMORY_DEPENDENCY_BOOK_H_
