// Copyright delayq authors.

#include "src/common/job_in_transaction.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/common/generated_id.h"
#include "src/common/new_job.h"
#include "src/common/status_macros.h"
#include "src/common/validation.h"

namespace delayq {
namespace internal {
namespace {

// A generated id: this process's prefix and a serial, as a scheduler's.
std::string NextId() {
  static const std::string* const prefix =
      new std::string(NewGeneratedIdPrefix());
  static std::atomic<uint64_t> serial{0};
  return GeneratedId(*prefix, serial.fetch_add(1) + 1);
}

// The job for one payload, without its id.
absl::StatusOr<NewJob> Resolve(absl::string_view topic,
                               absl::string_view payload,
                               const JobOptions& options, absl::Time now) {
  DQ_RETURN_IF_ERROR(ValidateTopic(topic));
  DQ_RETURN_IF_ERROR(ValidateOptions(options));
  DQ_RETURN_IF_ERROR(ValidatePayload(payload, kMaxPayloadBytesInTransaction));
  if (options.replace) {
    return absl::InvalidArgumentError(
        "replace is not taken inside the application's transaction: use "
        "Scheduler::Enqueue()");
  }
  const absl::Time run_at = options.run_at != absl::InfinitePast()
                                ? options.run_at
                                : now + options.delay;
  DQ_RETURN_IF_ERROR(ValidateRunAt(run_at, "run_at"));
  DQ_ASSIGN_OR_RETURN(absl::Time expire_at,
                      ResolveExpiry(options, now, run_at));
  return NewJobOf(topic, payload, options, run_at, expire_at);
}

}  // namespace

absl::StatusOr<NewJob> ResolveJobInTransaction(absl::string_view topic,
                                               absl::string_view payload,
                                               const JobOptions& options,
                                               absl::Time now) {
  DQ_ASSIGN_OR_RETURN(NewJob job, Resolve(topic, payload, options, now));
  job.id = options.id.empty() ? NextId() : options.id;
  return job;
}

absl::StatusOr<std::vector<NewJob>> ResolveBatchInTransaction(
    absl::string_view topic, absl::Span<const std::string> payloads,
    const JobOptions& options, absl::Time now) {
  std::vector<NewJob> jobs;
  jobs.reserve(payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) {
    DQ_ASSIGN_OR_RETURN(NewJob job, Resolve(topic, payloads[i], options, now));
    if (options.id.empty()) {
      job.id = NextId();
    } else {
      job.id = absl::StrCat(options.id, "-", i);
      // A batch's ids are the given one and a suffix: they too must fit.
      DQ_RETURN_IF_ERROR(ValidateId(job.id));
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace internal
}  // namespace delayq
