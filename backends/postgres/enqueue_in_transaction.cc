// Copyright delayq authors.
//
// EnqueueInTransaction(): a job added in the application's own transaction,
// checked and resolved as Scheduler::Enqueue() checks and resolves it.

#include <postgresql/libpq-fe.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "backends/postgres/internal/backend_impl.h"
#include "backends/postgres/internal/connection.h"
#include "backends/postgres/internal/schema.h"
#include "delayq/postgres_backend.h"
#include "src/common/generated_id.h"
#include "src/common/status_macros.h"
#include "src/common/validation.h"

namespace delayq {
namespace {

// The largest payload, as the scheduler's default (max_payload_bytes).
constexpr size_t kMaxPayloadBytes = 1 << 20;

// A generated id: this process's prefix and a serial, as a scheduler's.
std::string NextId() {
  static const std::string* const prefix =
      new std::string(internal::NewGeneratedIdPrefix());
  static std::atomic<uint64_t> serial{0};
  return internal::GeneratedId(*prefix, serial.fetch_add(1) + 1);
}

absl::StatusOr<NewJob> Resolve(absl::string_view topic,
                               absl::string_view payload,
                               const JobOptions& options, absl::Time now) {
  DQ_RETURN_IF_ERROR(internal::ValidateTopic(topic));
  DQ_RETURN_IF_ERROR(internal::ValidateOptions(options));
  DQ_RETURN_IF_ERROR(internal::ValidatePayload(payload, kMaxPayloadBytes));
  if (options.replace) {
    return absl::InvalidArgumentError(
        "replace is not taken inside the application's transaction: use "
        "Scheduler::Enqueue()");
  }
  NewJob job;
  job.id = options.id.empty() ? NextId() : options.id;
  job.topic = std::string(topic);
  job.payload = std::string(payload);
  job.priority = options.priority;
  job.max_attempts = options.max_attempts;
  job.ttr = options.ttr;
  job.backoff = options.backoff;
  job.run_at = options.run_at != absl::InfinitePast() ? options.run_at
                                                      : now + options.delay;
  DQ_RETURN_IF_ERROR(internal::ValidateRunAt(job.run_at, "run_at"));
  DQ_ASSIGN_OR_RETURN(job.expire_at,
                      internal::ResolveExpiry(options, now, job.run_at));
  job.discard_expired = options.discard_expired;
  job.unique_for = options.unique_for;
  job.keep_for = options.keep_for;
  if (job.keep_for > absl::ZeroDuration()) {
    job.keep_at_most =
        options.keep_at_most == 0 ? kMaxDonePerTopic : options.keep_at_most;
  }
  return job;
}

}  // namespace

absl::StatusOr<std::string> EnqueueInTransaction(
    PGconn* conn, absl::string_view schema, absl::string_view topic,
    absl::string_view payload, const JobOptions& options, absl::Time now) {
  if (!postgres_internal::ValidSchemaName(schema)) {
    return absl::InvalidArgumentError(
        absl::StrCat("postgres: bad schema name '", schema, "'"));
  }
  if (conn == nullptr || PQtransactionStatus(conn) != PQTRANS_INTRANS) {
    return absl::FailedPreconditionError(
        "postgres: EnqueueInTransaction() needs a connection with a "
        "transaction open (BEGIN), and none failed in it");
  }
  DQ_ASSIGN_OR_RETURN(NewJob job, Resolve(topic, payload, options, now));
  std::unique_ptr<postgres_internal::Connection> borrowed =
      postgres_internal::Connection::Borrow(
          conn, absl::StrCat("postgres (the application's connection, schema ",
                             schema, ")"));
  DQ_RETURN_IF_ERROR(postgres_internal::PostgresBackend::AddWithin(
      borrowed.get(), schema, {&job, 1}, now));
  return job.id;
}

}  // namespace delayq
