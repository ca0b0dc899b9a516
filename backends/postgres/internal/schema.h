// Copyright delayq authors.
//
// schema.h — delayq's tables in a PostgreSQL schema, their version, and the
// migrations from one version to the next.

#ifndef DELAYQ_BACKENDS_POSTGRES_INTERNAL_SCHEMA_H_
#define DELAYQ_BACKENDS_POSTGRES_INTERNAL_SCHEMA_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "backends/postgres/internal/connection.h"
#include "src/common/stored_state.h"

namespace delayq {
namespace postgres_internal {

// The schema version this code writes, kept in <schema>.schema_version.
inline constexpr int kSchemaVersion = 10;

// Job states as stored in jobs.state (src/common/stored_state.h).
using internal::kStateDead;
using internal::kStateDelayed;
using internal::kStateDone;
using internal::kStateReady;
using internal::kStateReserved;
using internal::kStateWaiting;

// ValidSchemaName()
//
// Letters, digits and '_', not starting with a digit, 1 to 63 bytes: a name
// that needs no quoting rules beyond double quotes and fits a NOTIFY
// channel name.
bool ValidSchemaName(absl::string_view name);

// WithSchema()
//
// `sql` with every "{s}" replaced by the quoted schema name.
std::string WithSchema(absl::string_view sql, absl::string_view schema);

// NewsChannel()
//
// The NOTIFY channel of the store in `schema`.
std::string NewsChannel(absl::string_view schema);

// PrepareSchema()
//
// Makes `schema` hold delayq's tables at kSchemaVersion: creates the schema
// if missing, creates or migrates the tables in one transaction, under an
// advisory lock so that processes opening the store together do it once.
// FailedPrecondition, changing nothing, for a schema of a newer version or
// one that holds tables but not delayq's.
absl::Status PrepareSchema(Connection* conn, absl::string_view schema,
                           bool create = true);

}  // namespace postgres_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_POSTGRES_INTERNAL_SCHEMA_H_
