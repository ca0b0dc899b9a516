// Copyright delayq authors.
//
// The jobs of a flow that have not finished, from its last job down
// (Scheduler::CancelFlow()): the job, then what it waits for
// (Job::after), then what those wait for, each once, parents before
// their dependencies.

#ifndef DELAYQ_SRC_SCHEDULER_FLOW_MEMBERS_H_
#define DELAYQ_SRC_SCHEDULER_FLOW_MEMBERS_H_

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "delayq/job.h"

namespace delayq {
namespace internal {

// `id` and every job it waits for, directly or through others, that is
// still to run (waiting, delayed, ready or reserved), read with `get`, in
// breadth-first order from `id`. A dependency that is gone or finished
// (done, dead) is left out, and so are the jobs only it leads to. NotFound
// when `id` names no job; FailedPrecondition when it has finished; other
// errors of `get` as they come.
absl::StatusOr<std::vector<std::string>> UnfinishedFlow(
    absl::string_view id,
    absl::FunctionRef<absl::StatusOr<Job>(absl::string_view)> get);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_FLOW_MEMBERS_H_
