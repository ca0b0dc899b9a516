// Copyright delayq authors.
//
// Input checks shared by the scheduler and the command-line program.

#ifndef DELAYQ_SRC_VALIDATION_H_
#define DELAYQ_SRC_VALIDATION_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "delayq/job.h"

namespace delayq {
namespace internal {

inline constexpr size_t kMaxTopicBytes = 200;
inline constexpr size_t kMaxIdBytes = 200;

// OK for a topic of 1..200 bytes from [A-Za-z0-9._:-]; InvalidArgument naming
// the problem otherwise.
absl::Status ValidateTopic(absl::string_view topic);

// OK for an id of at most 200 bytes ("" means "generate one").
absl::Status ValidateId(absl::string_view id);

// OK for options the stores can keep: delay >= 0, ttr > 0, max_attempts >= 1,
// backoff durations >= 0, and the id as ValidateId().
absl::Status ValidateOptions(const JobOptions& options);

// OK for a payload of at most `max_bytes`.
absl::Status ValidatePayload(absl::string_view payload, size_t max_bytes);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_VALIDATION_H_
