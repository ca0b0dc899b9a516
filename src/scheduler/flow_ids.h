// Copyright delayq authors.
//
// The ids the scheduler makes for the jobs of a flow that were given none
// (Scheduler::EnqueueFlow()). A flow is stored all or nothing, which a
// store that places jobs by their ids' hash tags (a sharded Redis
// namespace, Backend::PlacesIdsByHashTag()) does only for ids that lie
// together: there a made id carries the flow's tag, so that ids the caller
// never chose do not spread the flow. Elsewhere a made id is a plain
// generated id, as Enqueue() makes.

#ifndef DELAYQ_SRC_SCHEDULER_FLOW_IDS_H_
#define DELAYQ_SRC_SCHEDULER_FLOW_IDS_H_

#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "delayq/backend.h"

namespace delayq {
namespace internal {

// Gives every job of `jobs` whose id is empty the id `next_id()` or, when
// `by_hash_tag`, "{tag}:" + next_id(). The tag is the first hash tag among
// the ids the flow names, its jobs' own ids first (in order), then the ids
// they wait for and the batches they join; a flow that names none gets one
// of its own, next_id() drawn once more. InvalidArgument, naming the job,
// when a made id is longer than an id may be (a long tag).
absl::Status NameFlowJobs(absl::Span<NewJob> jobs, bool by_hash_tag,
                          absl::FunctionRef<std::string()> next_id);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_FLOW_IDS_H_
