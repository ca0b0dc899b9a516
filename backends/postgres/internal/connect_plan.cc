// Copyright delayq authors.

#include "backends/postgres/internal/connect_plan.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "backends/postgres/internal/schema.h"
#include "src/common/status_macros.h"
#include "src/common/transition_counts.h"

namespace delayq {
namespace postgres_internal {
namespace {

const std::string* Find(
    const std::vector<std::pair<std::string, std::string>>& params,
    absl::string_view key) {
  for (const auto& [k, v] : params) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string Or(const std::string* value, absl::string_view fallback) {
  return value != nullptr && !value->empty() ? *value : std::string(fallback);
}

// The server settings of every connection (libpq's `options`, a server
// command line), around the options' own `options`, which come between:
// - statement_timeout first, so `options` may set another: a server that
//   answers the network but not the statement (a lock held by a client
//   that hung) ends the statement;
// - then what the store's SQL is written for, last so nothing undoes it:
//   bytea in hex, the only form the store reads back (a database set to
//   `escape` would hand back payloads and results mangled), and READ
//   COMMITTED, which every transaction of the store assumes (a database
//   whose default is SERIALIZABLE would fail enqueues that merely ran
//   beside others);
// - and plans that look by key, whatever the tables' size when they were
//   made. A connection keeps its plans, made at the first calls: for a
//   worker that started before the backlog grew, on a table the server had
//   last seen empty, a scan of the whole table cost less than a look
//   through an index, and such a plan kept read the whole backlog on every
//   call (25 reservations and acks of 3,000 jobs read 449,018 rows). The
//   store's statements look by key; with sequential scans off the planner
//   takes an index wherever one serves. JIT compilation goes off with
//   them: a scan where no index serves (a table of one row) still runs,
//   but at the cost put on it, ten billion, the server would compile the
//   statement to machine code on every call.
std::string SessionOptions(const PostgresOptions& options) {
  const std::string* own = Find(options.params, "options");
  return absl::StrCat(
      "-c statement_timeout=", absl::ToInt64Milliseconds(options.timeout),
      own != nullptr && !own->empty() ? " " : "", own != nullptr ? *own : "",
      " -c bytea_output=hex"
      " -c default_transaction_isolation=read\\ committed"
      " -c enable_seqscan=off -c jit=off");
}

}  // namespace

absl::StatusOr<ConnectPlan> PlanConnections(const PostgresOptions& options) {
  ConnectPlan plan;
  plan.params = options.params;
  const auto& p = plan.params;
  plan.where = absl::StrCat("postgres ", Or(Find(p, "host"), "(local socket)"),
                            ":", Or(Find(p, "port"), "5432"), "/",
                            Or(Find(p, "dbname"), "(default database)"),
                            " (schema ", options.schema, ")");
  if (!ValidSchemaName(options.schema)) {
    return absl::InvalidArgumentError(
        absl::StrCat(plan.where,
                     ": schema name must be 1 to 63 letters, digits or '_', "
                     "not starting with a digit"));
  }
  if (options.timeout < absl::Seconds(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(plan.where, ": timeout must be at least a second"));
  }
  if (options.answer_timeout != absl::ZeroDuration() &&
      options.answer_timeout < absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        plan.where, ": answer_timeout must be at least a second (or zero)"));
  }
  // Three times the statement timeout: the server ends a slow statement
  // first, and its error has time to arrive.
  plan.answer_timeout = options.answer_timeout == absl::ZeroDuration()
                            ? 3 * options.timeout
                            : options.answer_timeout;
  if (options.max_idle_connections < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(plan.where, ": max_idle_connections must be at least 1"));
  }
  DQ_RETURN_IF_ERROR(internal::CheckCountsOptions(plan.where, options.counts));
  for (const auto& [key, value] : p) {
    if (key.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(plan.where, ": empty connection parameter name"));
    }
  }
  // Opening a connection is bounded by libpq's connect_timeout, for each
  // host of the URL in turn: a host that does not answer (down, or frozen
  // while its kernel still acknowledges) gives way to the next one, as a
  // multi-host URL expects. Data the server's host does not acknowledge
  // fails an open connection within the timeout; a server that stops
  // answering on one is left to answer_timeout (connection.cc).
  if (Find(p, "connect_timeout") == nullptr) {
    plan.params.emplace_back("connect_timeout",
                             absl::StrCat(std::max<int64_t>(
                                 2, absl::ToInt64Seconds(options.timeout))));
  }
  if (Find(p, "tcp_user_timeout") == nullptr) {
    plan.params.emplace_back(
        "tcp_user_timeout",
        absl::StrCat(absl::ToInt64Milliseconds(options.timeout)));
  }
  plan.params.erase(
      std::remove_if(plan.params.begin(), plan.params.end(),
                     [](const auto& kv) { return kv.first == "options"; }),
      plan.params.end());
  plan.params.emplace_back("options", SessionOptions(options));
  // An idle connection to a host that vanished (the subscription's, which
  // waits for news) is found dead within a minute, not the system's two
  // hours.
  for (const auto& [key, value] :
       {std::pair<const char*, const char*>{"keepalives_idle", "30"},
        {"keepalives_interval", "10"},
        {"keepalives_count", "3"}}) {
    if (Find(p, key) == nullptr) plan.params.emplace_back(key, value);
  }
  if (Find(p, "application_name") == nullptr) {
    plan.params.emplace_back("application_name", "delayq");
  }
  return plan;
}

}  // namespace postgres_internal
}  // namespace delayq
