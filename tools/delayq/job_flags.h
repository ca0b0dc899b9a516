// Copyright delayq authors.
//
// The flags that describe a job (--delay, --ttr, --id, ...) and the
// payload argument, said once for every command that enqueues a job.

#ifndef DELAYQ_TOOLS_DELAYQ_JOB_FLAGS_H_
#define DELAYQ_TOOLS_DELAYQ_JOB_FLAGS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "delayq/job.h"
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

}  // namespace cli
}  // namespace delayq

#endif  // DELAYQ_TOOLS_DELAYQ_JOB_FLAGS_H_
