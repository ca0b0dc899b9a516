// Copyright delayq authors.
//
// sharded_backend.h — a Redis namespace spread over several hash tags
// (RedisOptions::shards > 1), for code that needs more than the Backend
// interface (tests look at the shards). Programs use OpenRedisBackend().
//
// Each shard is a RedisBackend of its own on the tag ShardNamespace(ns, k),
// with its own connection pool (on a cluster, to the primary that serves
// its slot) and its own news subscription; every script runs on one shard,
// so touches one slot. Calls that name a job go to the shard of its id
// (ShardOfJob()); Reserve() asks the shards that ReserveHints says may
// have ready jobs; the rest reads or writes every shard and merges.
// backends/redis/README.md ("Sharded namespaces") says what each call
// guarantees. Done jobs (JobOptions::keep_for) stay on their job's shard,
// and each shard bounds its own: a topic keeps at most keep_at_most done
// jobs per shard, so up to shards * keep_at_most in all.

#ifndef DELAYQ_BACKENDS_REDIS_SHARDED_BACKEND_H_
#define DELAYQ_BACKENDS_REDIS_SHARDED_BACKEND_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/redis/backend_impl.h"
#include "backends/redis/internal/reserve_hints.h"
#include "delayq/backend.h"
#include "delayq/redis_backend.h"

namespace delayq {

class ShardedRedisBackend : public Backend {
 public:
  // Open()
  //
  // Opens every shard, shard 0 first (errors as OpenRedisBackend()).
  // REQUIRES: options.shards > 1.
  static absl::StatusOr<std::unique_ptr<ShardedRedisBackend>> Open(
      const RedisOptions& options);

  std::string Name() const override { return "redis"; }
  // Jobs of one shard are one `add` script; InvalidArgument, naming two
  // jobs of different shards, for jobs on several (README.md, "Flows").
  absl::Status CheckAddInOneStep(absl::Span<const NewJob> jobs) const override;
  // A job lies on the shard of its id's hash tag (ShardOfJob()).
  bool PlacesIdsByHashTag() const override { return true; }
  absl::Status Add(absl::Span<const NewJob> jobs, absl::Time now) override;
  // A batch lives on the shard of its id, and its jobs must too: Add()
  // refuses a job of a batch on another shard (InvalidArgument).
  absl::Status OpenBatch(const NewJob& completion, absl::Time now) override;
  using Backend::CloseBatch;
  absl::Status CloseBatch(absl::string_view id, absl::Time now,
                          std::vector<Settled>* settled) override;
  absl::StatusOr<Batch> GetBatch(absl::string_view id) override;
  using Backend::Reserve;
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Time now,
                                             ReserveReport* report) override;
  using Backend::Ack;
  absl::Status Ack(absl::string_view id, uint64_t token,
                   absl::string_view result, absl::Time now,
                   std::vector<Settled>* settled) override;
  // One script call per shard that holds some of the leases; a shard that
  // cannot be asked puts its error in its leases' slots. A job and the
  // jobs that wait for it share a shard, so each shard reports the jobs it
  // settled.
  using Backend::AckBatch;
  absl::StatusOr<std::vector<absl::Status>> AckBatch(
      absl::Span<const Lease> leases, absl::Time now,
      std::vector<Settled>* settled) override;
  using Backend::Fail;
  absl::StatusOr<FailOutcome> Fail(absl::string_view id, uint64_t token,
                                   absl::string_view error, absl::Time retry_at,
                                   absl::Time now,
                                   std::vector<Settled>* settled) override;
  absl::Status Release(absl::string_view id, uint64_t token, absl::Time run_at,
                       absl::Time now) override;
  absl::StatusOr<absl::Time> Touch(absl::string_view id, uint64_t token,
                                   absl::Time now) override;
  using Backend::Cancel;
  absl::Status Cancel(absl::string_view id, absl::Time now,
                      std::vector<Settled>* settled) override;
  absl::StatusOr<Job> Get(absl::string_view id) override;
  absl::StatusOr<std::vector<Job>> List(absl::string_view topic, JobState state,
                                        int limit) override;
  absl::StatusOr<JobPage> ListPage(absl::string_view topic, JobState state,
                                   int limit,
                                   absl::string_view cursor) override;
  absl::StatusOr<TopicStats> Stats(absl::string_view topic) override;
  // On the shard of the id.
  absl::Status PromoteJob(absl::string_view id, absl::Time now) override;
  // Shard by shard, until `max` went.
  using Backend::PurgeDead;
  absl::StatusOr<int> PurgeDead(absl::string_view topic, int max,
                                absl::Time now,
                                std::vector<Settled>* settled) override;
  // The shards' counts, summed.
  absl::StatusOr<std::vector<TopicMinute>> Counts(absl::Time from,
                                                  absl::Time to) override;
  absl::StatusOr<std::vector<TopicTotals>> CountTotals() override;
  // A job's events go to its shard's log, so its history is one shard's.
  absl::Status AppendEvents(absl::Span<const LoggedEvent> events) override;
  absl::StatusOr<std::vector<LoggedEvent>> JobEvents(absl::string_view id,
                                                     int limit) override;
  absl::StatusOr<std::vector<std::string>> Topics() override;
  absl::StatusOr<int> Kick(absl::string_view topic, int max,
                           absl::Time now) override;
  absl::Status KickJob(absl::string_view id, absl::Time now) override;
  absl::StatusOr<std::vector<std::string>> KickIds(absl::string_view topic,
                                                   int max,
                                                   absl::Time now) override;
  absl::StatusOr<PromoteResult> PromoteDue(absl::Time now, int limit) override;
  absl::StatusOr<absl::Time> NextDue() override;
  absl::Status Replace(const NewJob& job, absl::Time now) override;
  absl::Status SetPaused(absl::string_view topic, bool paused,
                         absl::Time now) override;
  absl::StatusOr<std::vector<std::string>> PausedTopics() override;
  absl::Status SetLimit(absl::string_view topic, const TopicLimit& limit,
                        absl::Time now) override;
  absl::Status ClearLimit(absl::string_view topic, absl::Time now) override;
  absl::StatusOr<std::vector<LimitedTopic>> Limits() override;
  absl::Status PutSchedule(const ScheduleRecord& schedule,
                           absl::Time now) override;
  absl::Status RemoveSchedule(absl::string_view name, absl::Time now) override;
  absl::StatusOr<std::vector<ScheduleRecord>> ListSchedules() override;
  absl::Status FireSchedule(absl::string_view name, int64_t revision,
                            absl::Time through, absl::Span<const NewJob> jobs,
                            absl::Time now) override;
  // Subscribe()
  //
  // One subscription per shard (each shard's channel is in its own slot,
  // so on a cluster on its own node), their news handed to `on_news` one
  // at a time; the news also steers Reserve() (reserve_hints.h).
  absl::StatusOr<std::unique_ptr<NewsSubscription>> Subscribe(
      NewsCallback on_news) override;

  int shard_count() const { return static_cast<int>(shards_.size()); }
  RedisBackend& shard(int k) { return *shards_[k]; }

  // Tests: `hook` runs before Add() writes a batch's part on shard k (after
  // every shard's ids were checked).
  void SetBeforeShardWriteForTesting(std::function<void(int shard)> hook) {
    before_shard_write_ = std::move(hook);
  }
  // Tests: how many reserve calls went to shard k.
  int64_t ReserveCallsForTesting(int k) const {
    return reserve_calls_[k].load();
  }

 private:
  explicit ShardedRedisBackend(std::vector<std::unique_ptr<RedisBackend>>);

  // Calls `call(k)` for every shard k at once (shard 0 on this thread, the
  // others on threads of their own), so that a call over every shard costs
  // one round trip's time, not N; the results by shard.
  template <typename T>
  std::vector<absl::StatusOr<T>> OnEveryShard(
      const std::function<absl::StatusOr<T>(RedisBackend&)>& call);

  RedisBackend& ShardOf(absl::string_view id);
  int IndexOf(absl::string_view id) const;
  // `jobs` grouped by shard, in shard order, each group in batch order.
  std::vector<std::vector<NewJob>> Split(absl::Span<const NewJob> jobs) const;
  // What a stored job tells the hints: ready on its shard, or due then,
  // and due again at its expiry.
  void NoteStored(int shard, const NewJob& job, absl::Time now);
  void NoteMoved(int shard, const std::vector<Transition>& moved);
  // InvalidArgument when a job of `jobs` waits for a job of another shard.
  absl::Status DependenciesOnOneShard(absl::Span<const NewJob> jobs) const;
  // InvalidArgument when a job of `jobs` joins a batch of another shard.
  absl::Status BatchesOnOneShard(absl::Span<const NewJob> jobs) const;
  // Add() of a batch on several shards (see README.md).
  absl::Status AddAcross(const std::vector<std::vector<NewJob>>& groups,
                         absl::Time now);
  // Deletes what AddAcross() stored on `shards` at `now`; `cause` is why.
  absl::Status Undo(const std::vector<std::vector<NewJob>>& groups,
                    const std::vector<int>& shards, absl::Status cause,
                    absl::Time now);

  std::vector<std::unique_ptr<RedisBackend>> shards_;
  redis_internal::ReserveHints hints_;
  std::function<void(int)> before_shard_write_;
  std::unique_ptr<std::atomic<int64_t>[]> reserve_calls_;
};

// The limit each shard of a namespace of `shards` shards enforces for a
// topic limited to `limit`: the same rate over `shards` periods, the burst
// and the concurrency divided and rounded up.
TopicLimit ShardShareOfLimit(const TopicLimit& limit, int shards);

}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_SHARDED_BACKEND_H_
