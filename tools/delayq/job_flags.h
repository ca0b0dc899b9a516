// Copyright delayq authors.
//
// The flags that describe a job (--delay, --ttr, --id, ...) and the
// payload argument, said once for every command that enqueues a job.

#ifndef DELAYQ_TOOLS_DELAYQ_JOB_FLAGS_H_
#define DELAYQ_TOOLS_DELAYQ_JOB_FLAGS_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "delayq/job.h"
#include "delayq/scheduler.h"
#include "tools/delayq/cli.h"

namespace delayq {
namespace cli {

// The job flags, for a CommandSpec.
std::vector<FlagSpec> JobFlags();

// Fills `options` from the job flags given; an error names the flag.
absl::Status ReadJobOptions(const Context& ctx, JobOptions& options);

// The payload: positional argument `index`, stdin when it is "-" (any
// bytes, no more than a scheduler takes and one), "" when there is none.
absl::StatusOr<std::string> ReadPayload(const Context& ctx, size_t index);

// How a command stores the one job its arguments describe (Enqueue(),
// OpenBatch()); the job's id, or why not.
using StoreJob = std::function<absl::StatusOr<std::string>(
    Scheduler& scheduler, const std::string& topic, const std::string& payload,
    const JobOptions& options)>;

// The run of a command that adds one job: TOPIC is positional argument
// `topic_index`, an optional PAYLOAD follows it. Checks the arguments and
// the job flags, opens the store, runs `store` and prints the id ({"id": ...}
// with --json); the exit status.
int AddOneJob(const Context& ctx, size_t topic_index, const StoreJob& store);

}  // namespace cli
}  // namespace delayq

#endif  // DELAYQ_TOOLS_DELAYQ_JOB_FLAGS_H_
