// Copyright delayq authors.
//
// backend_impl.h — the SQLite Backend class, shared by the file of its
// writes (sqlite_backend.cc) and the file of its reads (reads.cc).

#ifndef DELAYQ_BACKENDS_SQLITE_INTERNAL_BACKEND_IMPL_H_
#define DELAYQ_BACKENDS_SQLITE_INTERNAL_BACKEND_IMPL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "backends/sqlite/internal/db.h"
#include "backends/sqlite/internal/mutex.h"
#include "delayq/backend.h"
#include "delayq/sqlite_backend.h"

namespace delayq {
namespace sqlite_internal {

// Job states as stored, and back.
JobState StateFromInt(int64_t s);
int StateToInt(JobState s);

// Decodes a row of DQ_JOB_COLUMNS. Sets *token when not null.
Job ReadJob(const Statement& s, uint64_t* token = nullptr);

// SqliteBackend
//
// The Backend over one SQLite connection. Every public method takes mu_ and
// runs one transaction (or, for a read, one statement).
class SqliteBackend : public Backend {
 public:
  static absl::StatusOr<std::unique_ptr<Backend>> Open(
      const SqliteOptions& options);

  std::string Name() const override { return "sqlite"; }
  absl::Status Add(absl::Span<const NewJob> jobs, absl::Time now) override;
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Time now) override;
  absl::Status Ack(absl::string_view id, uint64_t token,
                   absl::Time now) override;
  absl::StatusOr<FailOutcome> Fail(absl::string_view id, uint64_t token,
                                   absl::string_view error, absl::Time retry_at,
                                   absl::Time now) override;
  absl::Status Release(absl::string_view id, uint64_t token, absl::Time run_at,
                       absl::Time now) override;
  absl::StatusOr<absl::Time> Touch(absl::string_view id, uint64_t token,
                                   absl::Time now) override;
  absl::Status Cancel(absl::string_view id, absl::Time now) override;
  absl::StatusOr<Job> Get(absl::string_view id) override;
  absl::StatusOr<std::vector<Job>> List(absl::string_view topic, JobState state,
                                        int limit) override;
  absl::StatusOr<TopicStats> Stats(absl::string_view topic) override;
  absl::StatusOr<std::vector<std::string>> Topics() override;
  absl::StatusOr<int> Kick(absl::string_view topic, int max,
                           absl::Time now) override;
  absl::Status KickJob(absl::string_view id, absl::Time now) override;
  absl::StatusOr<PromoteResult> PromoteDue(absl::Time now, int limit) override;
  absl::StatusOr<absl::Time> NextDue() override;

 private:
  // Every statement, prepared once.
  struct Statements {
    std::unique_ptr<Statement> begin, commit, insert, counter_get, counter_set,
        topic_due, all_due, next_due, make_ready, make_dead, reserve_one, ack,
        lease, retry, release, touch, cancel, get, list_ready, list_timed,
        list_dead, stats, topics, dead_of_topic, kick, state_of;
  };

  explicit SqliteBackend(std::unique_ptr<Connection> conn)
      : conn_(std::move(conn)) {}

  absl::Status PrepareAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT; rolls back when it fails.
  template <typename F>
  absl::Status WriteTransaction(F&& body) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The next value of the token/death-order counter. Inside a write
  // transaction; the caller stores the last value it used with SaveCounter().
  absl::StatusOr<int64_t> LoadCounter() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status SaveCounter(int64_t value) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Moves up to `limit` due jobs from the rows `stmt` yields (delayed ->
  // ready, expired reservation -> ready or dead) and records the moves in
  // `out` (when not null). Returns whether `stmt` had more rows than `limit`.
  absl::StatusOr<bool> MoveDue(Statement* stmt, int limit,
                               std::vector<Transition>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Mutex mu_;
  std::unique_ptr<Connection> conn_ ABSL_GUARDED_BY(mu_);
  Statements s_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sqlite_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_SQLITE_INTERNAL_BACKEND_IMPL_H_
