// Copyright delayq authors.
//
// job_in_transaction.h — a job enqueued in the application's own
// transaction (EnqueueInTransaction() of the PostgreSQL and SQLite stores),
// checked and resolved as Scheduler::Enqueue() checks and resolves one.
// Said once here so that the stores' functions take the same input.

#ifndef DELAYQ_SRC_COMMON_JOB_IN_TRANSACTION_H_
#define DELAYQ_SRC_COMMON_JOB_IN_TRANSACTION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "delayq/backend.h"
#include "delayq/job.h"

namespace delayq {
namespace internal {

// The largest payload taken in a transaction: the scheduler's default
// max_payload_bytes.
inline constexpr size_t kMaxPayloadBytesInTransaction = 1 << 20;

// ResolveJobInTransaction()
//
// The job Scheduler::Enqueue() would store for `topic`, `payload` and
// `options` at `now` (an empty id gets a generated one, in the scheduler's
// form, under a prefix drawn once per process). InvalidArgument for what
// the scheduler refuses, and for options.replace, which needs the store's
// own transaction.
absl::StatusOr<NewJob> ResolveJobInTransaction(absl::string_view topic,
                                               absl::string_view payload,
                                               const JobOptions& options,
                                               absl::Time now);

// ResolveBatchInTransaction()
//
// One job per payload with the same options, as Scheduler::EnqueueBatch()
// makes them: with a non-empty options.id the ids are options.id + "-" +
// index. An empty batch is no jobs.
absl::StatusOr<std::vector<NewJob>> ResolveBatchInTransaction(
    absl::string_view topic, absl::Span<const std::string> payloads,
    const JobOptions& options, absl::Time now);

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_COMMON_JOB_IN_TRANSACTION_H_
