// Copyright delayq authors.
//
// The bodies of the routes that act on many jobs at once, or name who
// works: what a bulk action, a flow and a reservation's "worker" read from
// a request's JSON before anything happens, so that a malformed request
// changes nothing. Apart from their routes so that the JSON fuzz target
// (tests/fuzz/json_fuzz.cc) reads bodies with them as the server does.

#ifndef DELAYQ_TOOLS_SERVE_API_REQUEST_BODIES_H_
#define DELAYQ_TOOLS_SERVE_API_REQUEST_BODIES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "delayq/scheduler.h"
#include "tools/serve/api/json_codec.h"

namespace delayq {
namespace serve {

// The most jobs one request adds (a batch, a flow) or acts on (a bulk
// action).
inline constexpr size_t kMaxBatch = 10'000;

// The longest worker name a reservation may give.
inline constexpr size_t kMaxWorkerName = 128;

// The ids of a bulk action's body, {"ids": [1 to kMaxBatch strings, none
// empty]}, in the order given (an id may repeat). InvalidArgument for
// anything else, another field among it.
absl::StatusOr<std::vector<std::string>> BulkIdsFromJson(const Json& body);

// The jobs of a flow's body, {"jobs": [1 to kMaxBatch objects]}, each with
// a "topic" that is not empty, its payload ("payload" or "payload_base64")
// and the options of one job (JobOptionsFromJson()). InvalidArgument naming
// the first job that is malformed ("jobs[3]: ..."); the scheduler checks
// the values.
absl::StatusOr<std::vector<Scheduler::FlowJob>> FlowFromJson(const Json& body);

// The "worker" an object names (its leases' holder): 1 to kMaxWorkerName
// printable ASCII characters without spaces, so that every view can show it
// as it is; "" when the object has no "worker". InvalidArgument otherwise.
absl::StatusOr<std::string> WorkerFromJson(const Json& object);

}  // namespace serve
}  // namespace delayq

#endif  // DELAYQ_TOOLS_SERVE_API_REQUEST_BODIES_H_
