// Copyright delayq authors.
//
// The HTTP API's routes, by what they act on. Each group is one function
// that adds its routes to a Router; the server calls them all.

#ifndef DELAYQ_TOOLS_SERVE_API_ROUTES_H_
#define DELAYQ_TOOLS_SERVE_API_ROUTES_H_

#include <atomic>

#include "absl/time/time.h"
#include "delayq/scheduler.h"
#include "tools/serve/api/lease_cache.h"
#include "tools/serve/api/router.h"

namespace delayq {
namespace serve {

// What routes share: the scheduler they drive and the server's limits.
struct RouteContext {
  Scheduler* scheduler = nullptr;
  absl::Duration max_wait = absl::Seconds(30);  // a reserve's longest wait
  // Set while the server drains: a reserve then returns at once.
  const std::atomic<bool>* draining = nullptr;
  // Reserves waiting for a job right now.
  std::atomic<int>* reserves_waiting = nullptr;
  // The leases reserve handed out, for the routes that finish them.
  LeaseCache* leases = nullptr;
};

// POST /v1/topics/{topic}/jobs, /v1/topics/{topic}/jobs/batch,
// GET /v1/topics/{topic}/jobs, GET and DELETE /v1/jobs/{id},
// POST /v1/jobs/{id}/retry, /v1/jobs/{id}/promote.
void AddJobRoutes(Router& router, const RouteContext& context);

// POST /v1/topics/{topic}/reserve, /v1/jobs/{id}/{ack,fail,release,touch}
// and /v1/leases/ack (many at once).
void AddLeaseRoutes(Router& router, const RouteContext& context);

// GET /v1/topics, /v1/topics/{topic}/stats; POST /v1/topics/{topic}/{kick,
// purge,pause,resume}.
void AddTopicRoutes(Router& router, const RouteContext& context);

// GET /v1/counts?minutes=N&topic=T: the store's counts per topic and minute.
void AddCountRoutes(Router& router, const RouteContext& context);

// GET /v1/jobs/{id}/history: the job's events from the store's event log.
void AddHistoryRoutes(Router& router, const RouteContext& context);

// GET /v1/limits; GET, PUT and DELETE /v1/topics/{topic}/limit.
void AddLimitRoutes(Router& router, const RouteContext& context);

// POST /v1/batches (open), POST /v1/batches/{id}/close, GET
// /v1/batches/{id}.
void AddBatchRoutes(Router& router, const RouteContext& context);

// GET /v1/schedules; GET, PUT and DELETE /v1/schedules/{name}.
void AddScheduleRoutes(Router& router, const RouteContext& context);

// GET /v1/workers: every live lease with its holder and since when, a
// page at a time.
void AddWorkerRoutes(Router& router, const RouteContext& context);

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_API_ROUTES_H_
