// Copyright delayq authors.
//
// The order a flow's jobs go to the store in (Scheduler::EnqueueFlow()):
// a store takes a job that waits for another of the same Add() only after
// it (Backend::Add(), "Dependencies"), while a caller may list a flow in
// any order, a parent before its children.

#ifndef DELAYQ_SRC_SCHEDULER_FLOW_ORDER_H_
#define DELAYQ_SRC_SCHEDULER_FLOW_ORDER_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "delayq/backend.h"

namespace delayq {
namespace internal {

// The indexes of `jobs`, each job after every job of `jobs` it waits for
// (NewJob::after), otherwise in the order given. AlreadyExists naming an id
// that two jobs have; InvalidArgument naming a job of a cycle. Ids in
// `after` that no job of `jobs` has are left to the store.
absl::StatusOr<std::vector<size_t>> FlowOrder(absl::Span<const NewJob> jobs);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_FLOW_ORDER_H_
