// Copyright delayq authors.
//
// pool.h — the PostgreSQL store's connections: a thread takes one for a
// call and gives it back; lost connections are dropped, so the next call
// connects again (a restarted server is picked up without the caller's
// help).

#ifndef DELAYQ_BACKENDS_POSTGRES_INTERNAL_POOL_H_
#define DELAYQ_BACKENDS_POSTGRES_INTERNAL_POOL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "backends/postgres/internal/connection.h"
#include "src/common/mutex.h"

namespace delayq {
namespace postgres_internal {

class Pool {
 public:
  // `params`, `where` and `answer_timeout` for Connection::Open(); at
  // most `max_idle` connections wait between calls.
  Pool(std::vector<std::pair<std::string, std::string>> params,
       std::string where, absl::Duration answer_timeout, int max_idle)
      : params_(std::move(params)),
        where_(std::move(where)),
        answer_timeout_(answer_timeout),
        max_idle_(max_idle) {}

  // A connection for one call: an idle one when there is one (`*reused`
  // true: it may have been lost since, unnoticed), else a new one.
  absl::StatusOr<std::unique_ptr<Connection>> Take(bool* reused)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A new connection, never an idle one.
  absl::StatusOr<std::unique_ptr<Connection>> Connect() const;
  // Gives `conn` back: kept when it is sound (not lost, not given up on),
  // idle (no transaction left open) and there is room; closed otherwise.
  void Give(std::unique_ptr<Connection> conn) ABSL_LOCKS_EXCLUDED(mu_);

  // Closes every idle connection: one was found lost (the server
  // restarted, or ended idle sessions), and those that waited beside it
  // most likely were too.
  void DropIdle() ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& where() const { return where_; }
  absl::Duration answer_timeout() const { return answer_timeout_; }

 private:
  const std::vector<std::pair<std::string, std::string>> params_;
  const std::string where_;
  const absl::Duration answer_timeout_;
  const int max_idle_;
  internal::Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace postgres_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_POSTGRES_INTERNAL_POOL_H_
