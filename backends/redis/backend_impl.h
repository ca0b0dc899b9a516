// Copyright delayq authors.
//
// backend_impl.h — the Redis backend class, for code that needs more
// than the Backend interface (batch acknowledgement in benchmarks, key layout
// checks in tests). Programs use OpenRedisBackend() from redis_backend.h.

#ifndef DELAYQ_BACKENDS_REDIS_BACKEND_IMPL_H_
#define DELAYQ_BACKENDS_REDIS_BACKEND_IMPL_H_

#include <memory>
#include <string>
#include <vector>

#include "backends/redis/client/connection.h"
#include "backends/redis/internal/keys.h"
#include "backends/redis/internal/script_args.h"
#include "delayq/backend.h"
#include "delayq/redis_backend.h"

namespace delayq {

// Why RedisOptions::dead_cap and the URL's dead_cap are refused.
inline constexpr char kNoDeadCap[] =
    "dead_cap is no longer supported: dead jobs stay until they are retried "
    "or cancelled";

class RedisBackend : public Backend {
 public:
  // Open()
  //
  // As OpenRedisBackend(), with the concrete type.
  static absl::StatusOr<std::unique_ptr<RedisBackend>> Open(
      const RedisOptions& options);

  // OpenShard()
  //
  // Shard `shard` of the namespace options.ns spread over options.shards
  // hash tags (sharded_backend.h), as a store of its own whose keys carry
  // the tag ShardNamespace(options.ns, shard). Open() is OpenShard(options,
  // 0) of an unsharded namespace. FailedPrecondition, changing nothing,
  // when the shard records another shard count or index (see
  // scripts/shard_meta-5.lua). REQUIRES: 0 <= shard < options.shards.
  static absl::StatusOr<std::unique_ptr<RedisBackend>> OpenShard(
      const RedisOptions& options, int shard);

  std::string Name() const override { return "redis"; }
  absl::Status Add(absl::Span<const NewJob> jobs, absl::Time now) override;
  // Batches: a batch is held in its completion job's record
  // (scripts/lib/batch.lua).
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
  // As Backend::AckAndReserve(), in one script call (one round trip).
  AckReserved AckAndReserve(absl::string_view id, uint64_t token,
                            absl::string_view result, absl::string_view topic,
                            int max, absl::Time now,
                            ReserveReport* report) override;
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

  // A job of a list with the cursor of the list after it.
  struct PlacedJob {
    Job job;
    std::string cursor;
  };
  // ListAfter()
  //
  // Up to `max` jobs of `topic` in `state` after `cursor` ("" for the
  // start), each with its own position: what a sharded namespace merges
  // the pages of its shards by. Errors as for ListPage().
  absl::StatusOr<std::vector<PlacedJob>> ListAfter(absl::string_view topic,
                                                   JobState state, int max,
                                                   absl::string_view cursor);
  absl::StatusOr<TopicStats> Stats(absl::string_view topic) override;
  absl::Status PromoteJob(absl::string_view id, absl::Time now) override;
  using Backend::PurgeDead;
  absl::StatusOr<int> PurgeDead(absl::string_view topic, int max,
                                absl::Time now,
                                std::vector<Settled>* settled) override;
  // Counts: counts.cc.
  absl::StatusOr<std::vector<TopicMinute>> Counts(absl::Time from,
                                                  absl::Time to) override;
  absl::StatusOr<std::vector<TopicTotals>> CountTotals() override;
  // The event log: events.cc.
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
  absl::Status SetPaused(absl::string_view topic, bool paused,
                         absl::Time now) override;
  absl::Status Replace(const NewJob& job, absl::Time now) override;
  absl::StatusOr<std::vector<std::string>> PausedTopics() override;
  absl::Status SetLimit(absl::string_view topic, const TopicLimit& limit,
                        absl::Time now) override;
  absl::Status ClearLimit(absl::string_view topic, absl::Time now) override;
  absl::StatusOr<std::vector<LimitedTopic>> Limits() override;
  // Schedules: schedules.cc.
  absl::Status PutSchedule(const ScheduleRecord& schedule,
                           absl::Time now) override;
  absl::Status RemoveSchedule(absl::string_view name, absl::Time now) override;
  absl::StatusOr<std::vector<ScheduleRecord>> ListSchedules() override;
  absl::Status FireSchedule(absl::string_view name, int64_t revision,
                            absl::Time through, absl::Span<const NewJob> jobs,
                            absl::Time now) override;
  // Subscribe()
  //
  // News of every process's changes to the namespace, published by the
  // scripts on the channel news_channel() and read on a connection of the
  // subscription's own (see news.h). Errors as for opening the store.
  absl::StatusOr<std::unique_ptr<NewsSubscription>> Subscribe(
      NewsCallback on_news) override;

  // AckBatch()
  //
  // As Backend::AckBatch(), in one script call (one round trip). The outer
  // status fails when the server could not be reached or answered with an
  // error.
  using Backend::AckBatch;
  absl::StatusOr<std::vector<absl::Status>> AckBatch(
      absl::Span<const Lease> leases, absl::Time now,
      std::vector<Settled>* settled) override;

  // For a batch that a sharded namespace writes shard by shard: OK when
  // Add() of `jobs` at `now` would find none of their ids taken, else
  // AlreadyExists naming the first taken one, as Add() would. Reads only.
  absl::Status CheckIdsFree(absl::Span<const NewJob> jobs, absl::Time now);

  // Deletes the live jobs among `ids` in any state, as Cancel() would but
  // holding no id in a dedup window and without an error for an id that
  // names no job; returns how many it deleted. Undoes the part of a
  // refused batch that one shard stored.
  absl::StatusOr<int> Withdraw(absl::Span<const std::string> ids,
                               absl::Time now);

  // Shard 0 of a sharded namespace: records `topic`'s limit as the caller
  // set it (nullptr: clears it), beside the share each shard enforces, and
  // reads them back. See sharded_backend.h.
  absl::Status RecordAskedLimit(absl::string_view topic,
                                const TopicLimit* limit);
  absl::StatusOr<std::vector<LimitedTopic>> AskedLimits();

  // The prefix every key of this store starts with: "{ns}:".
  const std::string& key_prefix() const { return keys_.prefix(); }

  // The sharded pub/sub channel the scripts announce news on: "{ns}:news".
  const std::string& news_channel() const { return news_channel_; }

 private:
  // The members of set `key`, sorted.
  absl::StatusOr<std::vector<std::string>> SortedMembers(
      const std::string& key);

  RedisBackend(const RedisOptions& options, int shard,
               redis_internal::PoolOptions pool);

  // Runs the limit script on the limits hash `hash` (Limits() or
  // LimitsAsked()); `spec` empty clears.
  absl::Status WriteLimit(std::string hash, absl::string_view topic,
                          std::string spec);
  // The limits kept in hash `hash`, sorted by topic.
  absl::StatusOr<std::vector<LimitedTopic>> ReadLimits(const std::string& hash);
  // Checks the shard's recorded shard count (scripts/shard_meta-5.lua).
  absl::Status CheckShardMeta(int shard);

  // Reads a reservation's reply from element `first` on: the moved jobs,
  // the limit's word, then the leases (reserve's reply after its "OK").
  absl::StatusOr<std::vector<Lease>> ParseReserved(const redisReply* reply,
                                                   size_t first,
                                                   absl::string_view script,
                                                   ReserveReport* report);
  std::string Micros(absl::Time t) const;
  // Add(), or with `opens_batch` OpenBatch() of the one job in `jobs`: the
  // add script.
  absl::Status Store(absl::Span<const NewJob> jobs, bool opens_batch,
                     absl::Time now);
  // Appends the arguments of `jobs` to `list` as add and schedule_fire take
  // them (9 per job); with `opens_batch` each opens a batch.
  static void AppendJobs(absl::Span<const NewJob> jobs,
                         redis_internal::ArgList* list,
                         bool opens_batch = false);

  // The script calls take a generated ToCall()'s result
  // (internal/script_calls.h): a call it could not make (an argument left
  // unset) is returned as it is, and nothing is sent.
  using ScriptCall = absl::StatusOr<redis_internal::Scripts::Call>;
  // Runs one call; an error reply becomes its status.
  absl::StatusOr<redis_internal::Reply> RunOne(ScriptCall call);
  // Runs a script; its replies that mean a contract error (a stale lease,
  // no such job, ...) become that error for job `id`, every other reply
  // comes back to the caller.
  absl::StatusOr<redis_internal::Reply> Run(ScriptCall call,
                                            absl::string_view id);
  // Run() for a script whose only other reply is "OK".
  absl::Status RunForOk(ScriptCall call, absl::string_view id);
  // RunForOk() for a script whose "OK" the jobs it settled follow
  // (scripts/lib/settled.lua), appended to `settled` when not null.
  absl::Status RunForSettled(ScriptCall call, absl::string_view id,
                             std::vector<Settled>* settled);

  // The arguments of a call with the keys that every script names the same
  // way (KeyLayout spells them) set: the prefix, and the job records
  // (`jobs`), the reservations (`reserved`) and the due index (`due`)
  // where the script takes them.
  template <typename Args>
  Args Keyed() const {
    Args a;
    a.prefix = keys_.prefix();
    if constexpr (redis_internal::HasJobsKey<Args>::value) {
      a.jobs = keys_.Jobs();
    }
    if constexpr (redis_internal::HasReservedKey<Args>::value) {
      a.reserved = keys_.Reserved();
    }
    if constexpr (redis_internal::HasDueKey<Args>::value) a.due = keys_.Due();
    return a;
  }
  // Keyed(), and the time a timed script takes: now and the clock mode.
  template <typename Args>
  Args Timed(absl::Time now) const {
    Args a = Keyed<Args>();
    a.now = Micros(now);
    a.clock_mode = clock_mode_;
    return a;
  }

  const RedisOptions options_;
  const redis_internal::KeyLayout keys_;
  const std::string news_channel_;
  // Every timed script's ARGV[2]: whose clock, and how far the caller's may
  // stray from the server's (scripts/lib/clock.lua).
  // Runs counts-3.lua for the minutes from `first_minute_us` to
  // `last_minute_us`; a reply checked to be {"OK", totals, minute, fields...}.
  absl::StatusOr<redis_internal::Reply> ReadCounts(int64_t first_minute_us,
                                                   int64_t last_minute_us);

  const std::string clock_mode_;
  // The counting scripts' ARGV[3] (scripts/lib/counts.lua): "0" when the
  // store counts nothing, else the window in seconds.
  const std::string counts_arg_;
  redis_internal::ConnectionPool pool_;
  redis_internal::Scripts scripts_;
};

}  // namespace delayq

#endif  // DELAYQ_BACKENDS_REDIS_BACKEND_IMPL_H_
