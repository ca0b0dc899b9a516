// Copyright delayq authors.
//
// Pages of the live leases of every topic (Scheduler::ListLeases()): the
// reserved jobs of each topic in topic order, each topic's by its own
// list's order, under one cursor that spans topics.

#ifndef DELAYQ_SRC_SCHEDULER_LEASE_PAGES_H_
#define DELAYQ_SRC_SCHEDULER_LEASE_PAGES_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "delayq/scheduler.h"

namespace delayq {
namespace internal {

// Up to `limit` live leases after `cursor` ("" for the first page), with
// the next page's cursor ("" after the last). InvalidArgument for a limit
// below 1 or a cursor that no page gave.
absl::StatusOr<JobPage> LeasePage(Scheduler& scheduler, int limit,
                                  absl::string_view cursor);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_LEASE_PAGES_H_
