// Copyright delayq authors.
//
// EnqueueInTransaction(): a job added in the application's own transaction,
// checked and resolved as Scheduler::Enqueue() checks and resolves it.

#include <postgresql/libpq-fe.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "backends/postgres/internal/backend_impl.h"
#include "backends/postgres/internal/connection.h"
#include "backends/postgres/internal/schema.h"
#include "delayq/postgres_backend.h"
#include "src/common/job_in_transaction.h"
#include "src/common/status_macros.h"

namespace delayq {

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
  DQ_ASSIGN_OR_RETURN(NewJob job, internal::ResolveJobInTransaction(
                                      topic, payload, options, now));
  std::unique_ptr<postgres_internal::Connection> borrowed =
      postgres_internal::Connection::Borrow(
          conn, absl::StrCat("postgres (the application's connection, schema ",
                             schema, ")"));
  DQ_RETURN_IF_ERROR(postgres_internal::PostgresBackend::AddWithin(
      borrowed.get(), schema, {&job, 1}, now));
  return job.id;
}

}  // namespace delayq
