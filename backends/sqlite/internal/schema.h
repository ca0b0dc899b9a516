// Copyright delayq authors.
//
// schema.h — delayq's tables in a SQLite file, their version, and the
// migrations from one version to the next.

#ifndef DELAYQ_BACKENDS_SQLITE_INTERNAL_SCHEMA_H_
#define DELAYQ_BACKENDS_SQLITE_INTERNAL_SCHEMA_H_

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "backends/sqlite/internal/db.h"
#include "src/common/stored_state.h"

namespace delayq {
namespace sqlite_internal {

// Stored in PRAGMA application_id: marks a file as delayq's ("dlyq").
inline constexpr int32_t kApplicationId = 0x646c7971;

// Stored in PRAGMA user_version: the schema this code writes.
inline constexpr int32_t kSchemaVersion = 18;

// Job states as stored in jobs.state (src/common/stored_state.h).
using internal::kStateDead;
using internal::kStateDelayed;
using internal::kStateDone;
using internal::kStateReady;
using internal::kStateReserved;
using internal::kStateWaiting;

// PrepareSchema()
//
// Makes the file behind `conn` hold delayq's schema at kSchemaVersion: an
// empty database is initialised, an older delayq schema is migrated, in one
// write transaction. Before writing anything it refuses, changing nothing,
// with FailedPrecondition a database of a newer schema or one that has
// tables but is not delayq's, and with DataLoss a damaged file, or one
// whose schema fails `compile` (which compiles every statement the store
// runs; in the migration's transaction, before it commits, for a file that
// is upgraded). A file this call creates gets pages of `page_size` bytes.
// Then switches the file to WAL.
absl::Status PrepareSchema(
    Connection* conn, int page_size,
    absl::FunctionRef<absl::Status(Connection*)> compile);

// CheckSchemaForTransaction()
//
// Whether delayq can write the file behind `conn`, the application's own
// connection, without changing its schema: FailedPrecondition, saying what
// to do, when the file has no delayq schema, one of another version (only
// OpenSqliteBackend() creates and migrates, in a transaction of its own),
// or the connection is not in WAL mode. Reads only.
absl::Status CheckSchemaForTransaction(Connection* conn);

// ValidPageSize()
//
// Whether SQLite accepts `bytes` as a page size: a power of two from 512 to
// 65536.
bool ValidPageSize(int bytes);

}  // namespace sqlite_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_SQLITE_INTERNAL_SCHEMA_H_
