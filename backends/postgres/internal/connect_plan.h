// Copyright delayq authors.
//
// connect_plan.h — PostgresOptions checked and turned into what every
// connection of the store is opened with.

#ifndef DELAYQ_BACKENDS_POSTGRES_INTERNAL_CONNECT_PLAN_H_
#define DELAYQ_BACKENDS_POSTGRES_INTERNAL_CONNECT_PLAN_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "delayq/postgres_backend.h"

namespace delayq {
namespace postgres_internal {

struct ConnectPlan {
  // libpq keywords and values: the options' own, and the timeouts unless
  // they set them.
  std::vector<std::pair<std::string, std::string>> params;
  // How errors name the server: "postgres HOST:PORT/DB (schema S)", never
  // with a password.
  std::string where;
  // How long a connection waits for each answer of the server
  // (PostgresOptions::answer_timeout, its default resolved).
  absl::Duration answer_timeout;
};

// InvalidArgument for a bad schema name, timeout, answer_timeout,
// max_idle_connections or counts window.
absl::StatusOr<ConnectPlan> PlanConnections(const PostgresOptions& options);

}  // namespace postgres_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_POSTGRES_INTERNAL_CONNECT_PLAN_H_
