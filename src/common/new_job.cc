// Copyright delayq authors.

#include "src/common/new_job.h"

#include <string>

namespace delayq {
namespace internal {

NewJob NewJobOf(absl::string_view topic, absl::string_view payload,
                const JobOptions& options, absl::Time run_at,
                absl::Time expire_at) {
  NewJob job;
  job.topic = std::string(topic);
  job.payload = std::string(payload);
  job.priority = options.priority;
  job.max_attempts = options.max_attempts;
  job.ttr = options.ttr;
  job.backoff = options.backoff;
  job.run_at = run_at;
  job.expire_at = expire_at;
  job.discard_expired = options.discard_expired;
  job.unique_for = options.unique_for;
  job.keep_for = options.keep_for;
  if (job.keep_for > absl::ZeroDuration()) {
    job.keep_at_most =
        options.keep_at_most == 0 ? kMaxDonePerTopic : options.keep_at_most;
  }
  job.after = options.after;
  job.on_dependency_failure = options.on_dependency_failure;
  job.batch = options.batch;
  return job;
}

}  // namespace internal
}  // namespace delayq
