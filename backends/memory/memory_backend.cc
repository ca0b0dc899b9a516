// Copyright delayq authors.
//
// The in-memory Backend. One mutex guards a job pool and ordered indexes
// that make every step O(1) or O(log n):
//   * the pool: one packed JobRecord per job (job_record.h), found by id
//     through an IdIndex (id_index.h) that reads the record's own id, so the
//     id is stored once;
//   * per topic, one index per state (topic_index.h): the ready and the dead
//     in B-trees, the delayed and the reserved (and the expiring) in timing
//     wheels, whose timers are added and cancelled in O(1);
//   * across topics, the topics ordered by when each next has something due,
//     for PromoteDue() and NextDue(): one entry per topic, not per job;
//   * the ids held by dedup windows, with the time each is free again;
//   * which waiting jobs wait for which (dependency_book.h);
//   * the batches and their unfinished jobs (batch_book.h).
// Each record sits in exactly the index of its state (and a delayed or ready
// one that expires, in its topic's expiring wheel too).

#include "delayq/memory_backend.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "backends/memory/batch_book.h"
#include "backends/memory/count_book.h"
#include "backends/memory/dependency_book.h"
#include "backends/memory/event_ring.h"
#include "backends/memory/id_index.h"
#include "backends/memory/job_record.h"
#include "backends/memory/topic_index.h"
#include "src/common/contract_errors.h"
#include "src/common/lease_token.h"
#include "src/common/limit_gate.h"
#include "src/common/list_cursor.h"
#include "src/common/mutex.h"
#include "src/common/settled_list.h"
#include "src/common/status_macros.h"
#include "src/common/transition_counts.h"

namespace delayq {
namespace {

using memory_internal::BatchBook;
using memory_internal::DeadlineAfter;
using memory_internal::DeathKey;
using memory_internal::DependencyBook;
using memory_internal::DoneKey;
using memory_internal::IdIndex;
using memory_internal::JobRecord;
using memory_internal::kNever;
using memory_internal::kNoTime;
using memory_internal::MicrosOf;
using memory_internal::ReadyKey;
using memory_internal::RestartIfEmpty;
using memory_internal::TimeOf;
using memory_internal::TopicIndex;

// A job's place in the order of List(state): the integers that order
// sorts by, the most significant first.
using Position = std::vector<int64_t>;

Position PositionOf(JobState state, const JobRecord& r) {
  const auto seq = static_cast<int64_t>(r.seq());
  switch (state) {
    case JobState::kReady:
      return {r.priority(), r.run_at(), seq};
    case JobState::kDelayed:
      return {r.run_at(), seq};
    case JobState::kReserved:
      return {r.deadline(), seq};
    case JobState::kDead:
      return {static_cast<int64_t>(r.death_seq())};
    case JobState::kDone:
      return {r.leave_at(), static_cast<int64_t>(r.done_seq())};
    case JobState::kWaiting:
      return {seq};
  }
  return {};
}

// Sequence numbers (enqueue, death and acknowledgement order) are never
// negative, and a priority is an int32: a cursor that says otherwise was
// not made here.
absl::StatusOr<Position> DecodePosition(absl::string_view text,
                                        JobState state) {
  DQ_ASSIGN_OR_RETURN(
      Position position,
      internal::DecodeIntCursor(text, state, internal::KeysetSize(state)));
  const bool priority_fits =
      state != JobState::kReady ||
      (position[0] >= INT32_MIN && position[0] <= INT32_MAX);
  if (!priority_fits || position.back() < 0) {
    return absl::InvalidArgumentError(
        "bad cursor: not a cursor that this store gave");
  }
  return position;
}

class MemoryBackend : public Backend {
 public:
  explicit MemoryBackend(const MemoryOptions& options)
      : counts_(options.counts), events_(options.events.max_events) {}

  std::string Name() const override { return "memory"; }

  absl::Status Add(absl::Span<const NewJob> jobs, absl::Time now) override {
    internal::MutexLock lock(&mu_);
    return AddLocked(jobs, now);
  }

  using Backend::Reserve;
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Time now,
                                             ReserveReport* report) override {
    internal::MutexLock lock(&mu_);
    const internal::SettledTo to(
        &settled_, report == nullptr ? nullptr : &report->settled);
    std::vector<Lease> leases;
    auto it = topics_.find(topic);
    if (it == topics_.end()) return leases;
    TopicIndex* index = it->second.get();
    const int64_t now_us = MicrosOf(now);
    // What is due in this topic moves first, earliest first, so the ready
    // index alone decides the order.
    for (int n = 0; n < kReservePromoteLimit; ++n) {
      const int64_t due = index->NextDue();
      if (due == kNoTime || due > now_us) break;
      Transition t = MoveDue(index->EarliestDue(), now_us);
      // A discarded job may have been the topic's last.
      const bool gone =
          t.kind == Transition::Kind::kDiscarded && !topics_.contains(topic);
      if (report != nullptr) report->moved.push_back(std::move(t));
      if (gone) return leases;
    }
    if (paused_.contains(topic)) return leases;
    auto limit = limits_.find(topic);
    std::optional<internal::LimitGate> gate;
    int64_t allowed = max;
    if (limit != limits_.end()) {
      gate.emplace(limit->second.limit, limit->second.tat_us, now_us,
                   static_cast<int64_t>(index->reserved.size()));
      allowed = gate->Allowed(max);
    }
    uint64_t token = 0;
    while (static_cast<int64_t>(leases.size()) < allowed &&
           !index->ready.empty()) {
      JobRecord* r = index->ready.begin()->record;
      Unlink(r);
      r->set_attempts(r->attempts() + 1);
      token = token == 0 ? internal::NewFirstLeaseToken() : token + 1;
      r->Reserve(token, DeadlineAfter(std::max(now_us, r->run_at()), r->ttr()));
      Link(r, now_us);
      counts_.Count(topic, now_us,
                    internal::CountOfDelivery(r->run_at(), now_us));
      Lease lease;
      holdings_[r] = {r->token(), report == nullptr ? "" : report->holder,
                      now_us};
      lease.job = JobOf(*r);
      lease.token = r->token();
      lease.deadline = lease.job.deadline;
      AddDependencyResults(r->id(), &lease);
      leases.push_back(std::move(lease));
    }
    if (gate.has_value()) {
      const int64_t taken = static_cast<int64_t>(leases.size());
      if (taken > 0) limit->second.tat_us = gate->TatAfter(taken);
      if (report != nullptr && taken < max && !index->ready.empty()) {
        report->limited_until = LimitTime(gate->NextAllowed(taken));
      }
    }
    return leases;
  }

  using Backend::Ack;
  absl::Status Ack(absl::string_view id, uint64_t token,
                   absl::string_view result, absl::Time now,
                   std::vector<Settled>* settled) override {
    internal::MutexLock lock(&mu_);
    const internal::SettledTo to(&settled_, settled);
    JobRecord* r = Current(id, token);
    if (r == nullptr) return internal::StaleLease(id);
    const int64_t now_us = MicrosOf(now);
    JobCounts done;
    done.done = 1;
    counts_.Count(r->topic()->name, now_us, done);
    HoldId(*r, now_us);
    Settle(r->id(), Outcome::kMet, now_us);
    // The topic's done jobs whose time is up go first (r keeps it alive).
    TrimDone(r->topic(), kMaxDonePerTopic, now_us);
    if (r->keep_for() <= 0) {
      Erase(r, now_us);
      return absl::OkStatus();
    }
    Unlink(r);
    r->Finish(next_done_++, now_us, result);
    Link(r, now_us);
    TrimDone(r->topic(), r->keep_at_most(), now_us);
    return absl::OkStatus();
  }

  using Backend::Fail;
  absl::StatusOr<FailOutcome> Fail(absl::string_view id, uint64_t token,
                                   absl::string_view error, absl::Time retry_at,
                                   absl::Time now,
                                   std::vector<Settled>* settled) override {
    internal::MutexLock lock(&mu_);
    const internal::SettledTo to(&settled_, settled);
    JobRecord* r = Current(id, token);
    if (r == nullptr) return internal::StaleLease(id);
    Unlink(r);
    r->set_last_error(error);
    const FailOutcome outcome = r->attempts() < r->max_attempts()
                                    ? FailOutcome::kRetry
                                    : FailOutcome::kDead;
    counts_.Count(r->topic()->name, MicrosOf(now),
                  internal::CountOfFail(outcome));
    if (outcome == FailOutcome::kRetry) {
      r->set_run_at(MicrosOf(retry_at));
      r->Wait(retry_at > now ? JobState::kDelayed : JobState::kReady);
    } else {
      r->Die(next_death_++, MicrosOf(now));
    }
    Link(r, MicrosOf(now));
    if (outcome == FailOutcome::kDead) {
      Settle(r->id(), Outcome::kFailed, MicrosOf(now));
    }
    return outcome;
  }

  absl::Status Release(absl::string_view id, uint64_t token, absl::Time run_at,
                       absl::Time now) override {
    internal::MutexLock lock(&mu_);
    JobRecord* r = Current(id, token);
    if (r == nullptr) return internal::StaleLease(id);
    Unlink(r);
    r->set_attempts(std::max(0, r->attempts() - 1));
    r->set_run_at(MicrosOf(run_at));
    r->Wait(run_at > now ? JobState::kDelayed : JobState::kReady);
    Link(r, MicrosOf(now));
    return absl::OkStatus();
  }

  absl::StatusOr<absl::Time> Touch(absl::string_view id, uint64_t token,
                                   absl::Time now) override {
    internal::MutexLock lock(&mu_);
    JobRecord* r = Current(id, token);
    if (r == nullptr) return internal::StaleLease(id);
    Unlink(r);
    r->set_deadline(DeadlineAfter(MicrosOf(now), r->ttr()));
    Link(r, MicrosOf(now));
    return TimeOf(r->deadline());
  }

  using Backend::Cancel;
  absl::Status Cancel(absl::string_view id, absl::Time now,
                      std::vector<Settled>* settled) override {
    internal::MutexLock lock(&mu_);
    const internal::SettledTo to(&settled_, settled);
    JobRecord* r = Find(id);
    if (r == nullptr) return internal::NoSuchJob(id);
    HoldId(*r, MicrosOf(now));
    Erase(r, MicrosOf(now));
    return absl::OkStatus();
  }

  absl::StatusOr<Job> Get(absl::string_view id) override {
    internal::MutexLock lock(&mu_);
    const JobRecord* r = Find(id);
    if (r == nullptr) return internal::NoSuchJob(id);
    return JobOf(*r);
  }

  absl::StatusOr<std::vector<Job>> List(absl::string_view topic, JobState state,
                                        int limit) override {
    if (limit <= 0) return std::vector<Job>();
    DQ_ASSIGN_OR_RETURN(JobPage page, ListPage(topic, state, limit, ""));
    return std::move(page.jobs);
  }

  // A page goes on after a position in the state's order, the tuple of
  // integers that order sorts by (PositionOf()). The B-trees (ready, dead,
  // done) seek to it; a wheel (delayed, reserved) is walked from its front
  // past the jobs before it, which costs a deep page of those two lists
  // the jobs before it (in memory, under the lock).
  absl::StatusOr<JobPage> ListPage(absl::string_view topic, JobState state,
                                   int limit,
                                   absl::string_view cursor) override {
    std::optional<Position> after;
    if (!cursor.empty()) {
      DQ_ASSIGN_OR_RETURN(after, DecodePosition(cursor, state));
    }
    internal::MutexLock lock(&mu_);
    std::vector<const JobRecord*> got;
    auto it = topics_.find(topic);
    if (it == topics_.end() || limit <= 0) return JobPage();
    const TopicIndex& index = *it->second;
    const size_t want = static_cast<size_t>(limit) + 1;
    auto take = [&](auto from, const auto& set, auto record_of) {
      for (; from != set.end() && got.size() < want; ++from) {
        got.push_back(record_of(*from));
      }
    };
    auto take_timers = [&](const auto& wheel) {
      wheel.ForEachInOrder([&](const JobRecord* r) {
        if (!after.has_value() || PositionOf(state, *r) > *after) {
          got.push_back(r);
        }
        return got.size() < want;
      });
    };
    switch (state) {
      case JobState::kReady: {
        auto from = index.ready.begin();
        if (after.has_value()) {
          from = index.ready.upper_bound(memory_internal::ReadyPosition{
              (*after)[1], static_cast<int32_t>((*after)[0]),
              static_cast<uint64_t>((*after)[2])});
        }
        take(from, index.ready, [](const ReadyKey& k) { return k.record; });
        break;
      }
      case JobState::kDelayed:
        take_timers(index.delayed);
        break;
      case JobState::kReserved:
        take_timers(index.reserved);
        break;
      case JobState::kDead: {
        auto from = index.dead.begin();
        if (after.has_value()) {
          // Death orders are unique: the next one up is the first after.
          from = index.dead.lower_bound(
              DeathKey{static_cast<uint64_t>((*after)[0]) + 1, nullptr});
        }
        take(from, index.dead, [](const DeathKey& k) { return k.second; });
        break;
      }
      case JobState::kDone: {
        auto from = index.done.begin();
        if (after.has_value()) {
          from = index.done.upper_bound(DoneKey{
              (*after)[0], static_cast<uint64_t>((*after)[1]), nullptr});
        }
        take(from, index.done, [](const DoneKey& k) { return k.record; });
        break;
      }
      case JobState::kWaiting: {
        auto from = index.waiting.begin();
        if (after.has_value()) {
          // Enqueue orders are unique: the next one up is the first after.
          from = index.waiting.lower_bound(
              {static_cast<uint64_t>((*after)[0]) + 1, nullptr});
        }
        take(from, index.waiting, [](const auto& k) { return k.second; });
        break;
      }
    }
    JobPage page;
    for (size_t i = 0; i < got.size() && i < static_cast<size_t>(limit); ++i) {
      page.jobs.push_back(JobOf(*got[i]));
    }
    if (got.size() == want) {
      page.next_cursor =
          internal::EncodeIntCursor(state, PositionOf(state, *got[limit - 1]));
    }
    return page;
  }

  absl::StatusOr<TopicStats> Stats(absl::string_view topic) override {
    internal::MutexLock lock(&mu_);
    TopicStats stats;
    auto it = topics_.find(topic);
    if (it == topics_.end()) return stats;
    const TopicIndex& index = *it->second;
    stats.delayed = index.delayed.size();
    stats.ready = index.ready.size();
    stats.reserved = index.reserved.size();
    stats.dead = index.dead.size();
    stats.done = index.done.size();
    stats.waiting = index.waiting.size();
    return stats;
  }

  absl::StatusOr<std::vector<std::string>> Topics() override {
    internal::MutexLock lock(&mu_);
    std::vector<std::string> out;
    out.reserve(topics_.size());
    for (const auto& [name, index] : topics_) out.push_back(std::string(name));
    return out;
  }

  absl::StatusOr<int> Kick(absl::string_view topic, int max,
                           absl::Time now) override {
    absl::StatusOr<std::vector<std::string>> ids = KickIds(topic, max, now);
    if (!ids.ok()) return ids.status();
    return static_cast<int>(ids->size());
  }

  absl::StatusOr<std::vector<std::string>> KickIds(absl::string_view topic,
                                                   int max,
                                                   absl::Time now) override {
    internal::MutexLock lock(&mu_);
    std::vector<std::string> ids;
    auto it = topics_.find(topic);
    if (it == topics_.end()) return ids;
    TopicIndex* index = it->second.get();
    while (static_cast<int>(ids.size()) < max && !index->dead.empty()) {
      JobRecord* r = index->dead.begin()->second;
      ids.emplace_back(r->id());
      Revive(r, now);
    }
    return ids;
  }

  absl::Status KickJob(absl::string_view id, absl::Time now) override {
    internal::MutexLock lock(&mu_);
    JobRecord* r = Find(id);
    if (r == nullptr) return internal::NoSuchJob(id);
    if (r->state() != JobState::kDead) {
      return internal::NotDead(id, JobStateName(r->state()));
    }
    Revive(r, now);
    return absl::OkStatus();
  }

  absl::Status PromoteJob(absl::string_view id, absl::Time now) override {
    internal::MutexLock lock(&mu_);
    JobRecord* r = Find(id);
    if (r == nullptr) return internal::NoSuchJob(id);
    if (r->state() != JobState::kDelayed) {
      return internal::NotDelayed(id, JobStateName(r->state()));
    }
    Unlink(r);
    r->set_run_at(MicrosOf(now));
    r->Wait(JobState::kReady);
    Link(r, MicrosOf(now));
    return absl::OkStatus();
  }

  using Backend::PurgeDead;
  absl::StatusOr<int> PurgeDead(absl::string_view topic, int max,
                                absl::Time now,
                                std::vector<Settled>* settled) override {
    internal::MutexLock lock(&mu_);
    const internal::SettledTo to(&settled_, settled);
    int purged = 0;
    // Looked up for every job: Erase() drops the topic with its last one.
    while (purged < max) {
      auto it = topics_.find(topic);
      if (it == topics_.end() || it->second->dead.empty()) break;
      JobRecord* r = it->second->dead.begin()->second;
      HoldId(*r, MicrosOf(now));
      Erase(r, MicrosOf(now));
      ++purged;
    }
    return purged;
  }

  absl::StatusOr<PromoteResult> PromoteDue(absl::Time now, int limit) override {
    internal::MutexLock lock(&mu_);
    PromoteResult result;
    const internal::SettledTo to(&settled_, &result.settled);
    const int64_t now_us = MicrosOf(now);
    DropLeavingDone(now_us);
    while (!due_topics_.empty() && due_topics_.begin()->first <= now_us) {
      if (static_cast<int>(result.transitions.size()) >= limit) {
        result.more = true;
        break;
      }
      result.transitions.push_back(
          MoveDue(due_topics_.begin()->second->EarliestDue(), now_us));
    }
    return result;
  }

  absl::Status Replace(const NewJob& job, absl::Time now) override {
    internal::MutexLock lock(&mu_);
    JobRecord* old = jobs_.Find(job.id);
    if (old == nullptr) return internal::NoSuchJob(job.id);
    if (old->state() != JobState::kDelayed &&
        old->state() != JobState::kReady) {
      return internal::NotReplaceable(job.id, JobStateName(old->state()));
    }
    if (old->topic()->name != job.topic) {
      return internal::OtherTopic(job.id, old->topic()->name);
    }
    Unlink(old);
    holdings_.erase(old);
    JobRecord::Ptr fresh = old->WithPayload(job.payload);
    JobRecord* r = fresh.get();
    jobs_.Replace(old, std::move(fresh));  // destroys *old
    r->set_run_at(MicrosOf(job.run_at));
    r->Wait(job.run_at > now ? JobState::kDelayed : JobState::kReady);
    Link(r, MicrosOf(now));
    return absl::OkStatus();
  }

  absl::Status SetPaused(absl::string_view topic, bool paused,
                         absl::Time now) override {
    internal::MutexLock lock(&mu_);
    if (paused) {
      paused_.insert(std::string(topic));
    } else {
      paused_.erase(topic);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<std::string>> PausedTopics() override {
    internal::MutexLock lock(&mu_);
    return std::vector<std::string>(paused_.begin(), paused_.end());
  }

  absl::Status SetLimit(absl::string_view topic, const TopicLimit& limit,
                        absl::Time now) override {
    internal::MutexLock lock(&mu_);
    limits_[topic].limit = limit;  // a new entry starts with a fresh bucket
    return absl::OkStatus();
  }

  absl::Status ClearLimit(absl::string_view topic, absl::Time now) override {
    internal::MutexLock lock(&mu_);
    limits_.erase(topic);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<LimitedTopic>> Limits() override {
    internal::MutexLock lock(&mu_);
    std::vector<LimitedTopic> out;
    for (const auto& [topic, state] : limits_) {
      out.push_back({topic, state.limit});
    }
    return out;
  }

  absl::Status PutSchedule(const ScheduleRecord& schedule,
                           absl::Time now) override {
    internal::MutexLock lock(&mu_);
    auto [it, added] = schedules_.try_emplace(schedule.name, schedule);
    ScheduleRecord& stored = it->second;
    const bool respecified =
        added || stored.spec != schedule.spec ||
        stored.options.time_zone != schedule.options.time_zone;
    const absl::Time done_through = stored.done_through;
    const int64_t revision = stored.revision;
    stored = schedule;
    stored.done_through = respecified ? now : done_through;
    stored.revision = revision + 1;
    return absl::OkStatus();
  }

  absl::Status RemoveSchedule(absl::string_view name, absl::Time now) override {
    internal::MutexLock lock(&mu_);
    auto it = schedules_.find(name);
    if (it == schedules_.end()) return internal::NoSuchSchedule(name);
    schedules_.erase(it);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<ScheduleRecord>> ListSchedules() override {
    internal::MutexLock lock(&mu_);
    std::vector<ScheduleRecord> out;
    out.reserve(schedules_.size());
    for (const auto& [name, schedule] : schedules_) out.push_back(schedule);
    return out;
  }

  absl::Status FireSchedule(absl::string_view name, int64_t revision,
                            absl::Time through, absl::Span<const NewJob> jobs,
                            absl::Time now) override {
    internal::MutexLock lock(&mu_);
    auto it = schedules_.find(name);
    if (it == schedules_.end()) return internal::NoSuchSchedule(name);
    ScheduleRecord& stored = it->second;
    if (stored.revision != revision) return internal::ScheduleMoved(name);
    if (absl::Status s = AddLocked(jobs, now); !s.ok()) return s;
    stored.done_through = through;
    ++stored.revision;
    return absl::OkStatus();
  }

  absl::StatusOr<absl::Time> NextDue() override {
    internal::MutexLock lock(&mu_);
    if (due_topics_.empty()) return absl::InfiniteFuture();
    return TimeOf(due_topics_.begin()->first);
  }

  absl::StatusOr<std::vector<TopicMinute>> Counts(absl::Time from,
                                                  absl::Time to) override {
    internal::MutexLock lock(&mu_);
    return counts_.Minutes(from, to);
  }

  absl::StatusOr<std::vector<TopicTotals>> CountTotals() override {
    internal::MutexLock lock(&mu_);
    return counts_.Totals();
  }

  absl::Status AppendEvents(absl::Span<const LoggedEvent> events) override {
    internal::MutexLock lock(&events_mu_);
    events_.Append(events);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<LoggedEvent>> JobEvents(absl::string_view id,
                                                     int limit) override {
    internal::MutexLock lock(&events_mu_);
    return events_.Of(id, limit);
  }

  absl::Status OpenBatch(const NewJob& completion, absl::Time now) override {
    internal::MutexLock lock(&mu_);
    DropPassedHolds(MicrosOf(now));
    if (absl::Status s = CheckIdsFree({&completion, 1}); !s.ok()) return s;
    JobRecord* r = Place(completion, now);
    r->Wait(JobState::kWaiting);
    Link(r, MicrosOf(now));
    batches_.Open(completion.id);
    CountAdded({&completion, 1}, now);
    return absl::OkStatus();
  }

  using Backend::CloseBatch;
  absl::Status CloseBatch(absl::string_view id, absl::Time now,
                          std::vector<Settled>* settled) override {
    internal::MutexLock lock(&mu_);
    const internal::SettledTo to(&settled_, settled);
    bool completed = false;
    if (absl::Status s = batches_.Close(id, &completed); !s.ok()) return s;
    if (completed) ReleaseCompletion(id, MicrosOf(now));
    return absl::OkStatus();
  }

  absl::StatusOr<Batch> GetBatch(absl::string_view id) override {
    internal::MutexLock lock(&mu_);
    return batches_.Get(id);
  }

 private:
  absl::Status AddLocked(absl::Span<const NewJob> jobs, absl::Time now) {
    DropPassedHolds(MicrosOf(now));
    if (jobs.empty()) return absl::OkStatus();
    if (!HasBatches(jobs)) return StoreJobs(jobs, now);
    for (const NewJob& job : jobs) {
      if (job.batch.empty()) continue;
      if (absl::Status s = batches_.CheckOpen(job.batch); !s.ok()) return s;
    }
    if (absl::Status s = StoreJobs(jobs, now); !s.ok()) return s;
    for (const NewJob& job : jobs) {
      if (!job.batch.empty()) JoinBatch(job);
    }
    return absl::OkStatus();
  }

  static bool HasBatches(absl::Span<const NewJob> jobs) {
    return std::any_of(jobs.begin(), jobs.end(),
                       [](const NewJob& job) { return !job.batch.empty(); });
  }

  // Counts the just stored `job` into its batch: pending, or finished when
  // a dependency's failure sent it dead or away as it was added.
  void JoinBatch(const NewJob& job) {
    const JobRecord* r = Find(job.id);
    std::optional<BatchBook::Finish> finished;
    if (r == nullptr) {
      finished = BatchBook::Finish::kCancelled;
    } else if (r->state() == JobState::kDead) {
      finished = BatchBook::Finish::kDead;
    }
    batches_.Join(job.batch, job.id, finished);
  }

  // Add() once the batches were found open.
  absl::Status StoreJobs(absl::Span<const NewJob> jobs, absl::Time now) {
    if (HasDependencies(jobs)) return AddWaiting(jobs, now);
    if (jobs.size() == 1) return AddOne(jobs[0], now);
    if (absl::Status s = CheckIdsFree(jobs); !s.ok()) return s;
    for (const NewJob& job : jobs) Link(Place(job, now), MicrosOf(now));
    CountAdded(jobs, now);
    return absl::OkStatus();
  }

  void CountAdded(absl::Span<const NewJob> jobs, absl::Time now) {
    JobCounts one;
    one.enqueued = 1;
    for (const NewJob& job : jobs) counts_.Count(job.topic, MicrosOf(now), one);
  }

  static bool HasDependencies(absl::Span<const NewJob> jobs) {
    return std::any_of(jobs.begin(), jobs.end(),
                       [](const NewJob& job) { return !job.after.empty(); });
  }

  // Add() of a batch in which some jobs wait for others: every dependency
  // must name a stored job or an earlier one of the batch.
  absl::Status AddWaiting(absl::Span<const NewJob> jobs, absl::Time now) {
    if (absl::Status s = CheckIdsFree(jobs); !s.ok()) return s;
    absl::flat_hash_set<absl::string_view> earlier;
    for (const NewJob& job : jobs) {
      for (const std::string& dependency : job.after) {
        if (!earlier.contains(dependency) && Find(dependency) == nullptr) {
          return internal::NoSuchDependency(job.id, dependency);
        }
      }
      earlier.insert(job.id);
    }
    const int64_t now_us = MicrosOf(now);
    for (const NewJob& job : jobs) {
      JobRecord* r = Place(job, now);
      Link(r, now_us);
      if (!job.after.empty()) Await(r, job, now_us);
    }
    CountAdded(jobs, now);
    return absl::OkStatus();
  }

  // Makes the new job `r` wait for what `job.after` names that is not done
  // yet. A dependency that is dead (or, earlier in the batch, went already)
  // applies the job's policy at once.
  void Await(JobRecord* r, const NewJob& job, int64_t now_us) {
    dependencies_.Remember(r->id(), job.after);
    std::vector<std::string> pending;
    for (const std::string& dependency : job.after) {
      const JobRecord* d = Find(dependency);
      const bool gone = d == nullptr;
      if (!gone && d->state() == JobState::kDone) continue;
      if (!gone && d->state() != JobState::kDead) {
        pending.push_back(dependency);
        continue;
      }
      if (job.on_dependency_failure == DependencyFailure::kRun) continue;
      const std::string id(r->id());
      if (job.on_dependency_failure == DependencyFailure::kFail) {
        Kill(r,
             gone ? internal::DependencyCancelled(dependency)
                  : internal::DependencyFailed(dependency),
             now_us);
      } else {
        HoldId(*r, now_us);
        EraseRecord(r);
      }
      return;
    }
    if (pending.empty()) return;
    Unlink(r);
    r->Wait(JobState::kWaiting);
    Link(r, now_us);
    dependencies_.Hold(r->id(), pending, job.on_dependency_failure);
  }

  // What became of a job that others may wait for.
  enum class Outcome {
    kMet,     // acknowledged
    kFailed,  // dead
    kGone,    // left the store unacknowledged
  };

  // Settles the jobs that wait for `id` after `outcome`, and in turn the
  // jobs that wait for those that failed or went because of it. A list of
  // work rather than recursion, so a long chain cannot exhaust the stack.
  void Settle(absl::string_view id, Outcome outcome, int64_t now_us) {
    FinishInBatch(id, outcome, now_us);
    if (!dependencies_.HasDependants(id)) return;
    std::vector<std::pair<std::string, Outcome>> work;
    work.emplace_back(std::string(id), outcome);
    while (!work.empty()) {
      auto [dependency, what] = std::move(work.back());
      work.pop_back();
      if (dependency != id) FinishInBatch(dependency, what, now_us);
      for (DependencyBook::Verdict& v :
           dependencies_.Settle(dependency, what == Outcome::kMet)) {
        JobRecord* r = Find(v.waiter);
        switch (v.kind) {
          case DependencyBook::Verdict::Kind::kRelease:
            LetGo(r, now_us);
            break;
          case DependencyBook::Verdict::Kind::kFail:
            Kill(r,
                 what == Outcome::kFailed
                     ? internal::DependencyFailed(dependency)
                     : internal::DependencyCancelled(dependency),
                 now_us);
            work.emplace_back(std::move(v.waiter), Outcome::kFailed);
            break;
          case DependencyBook::Verdict::Kind::kCancel:
            internal::NoteSettled(settled_, Settled::Kind::kCancelled, r->id(),
                                  r->topic()->name);
            HoldId(*r, now_us);
            EraseRecord(r);
            work.emplace_back(std::move(v.waiter), Outcome::kGone);
            break;
        }
      }
    }
  }

  // Counts the job `id` finished in its batch, if it is of one, and
  // releases the batch's completion job when that completed the batch.
  void FinishInBatch(absl::string_view id, Outcome outcome, int64_t now_us) {
    std::optional<std::string> completed = batches_.Settle(
        id, outcome == Outcome::kMet      ? BatchBook::Finish::kDone
            : outcome == Outcome::kFailed ? BatchBook::Finish::kDead
                                          : BatchBook::Finish::kCancelled);
    if (completed.has_value()) ReleaseCompletion(*completed, now_us);
  }

  // Lets the waiting completion job `id` go: ready, or delayed until its
  // run_at.
  void ReleaseCompletion(absl::string_view id, int64_t now_us) {
    JobRecord* r = Find(id);
    if (r == nullptr || r->state() != JobState::kWaiting) return;
    LetGo(r, now_us);
  }

  // Lets the waiting job `r` go: ready, or delayed until its run_at.
  void LetGo(JobRecord* r, int64_t now_us) {
    internal::NoteSettled(settled_, internal::ReleasedAs(r->run_at(), now_us),
                          r->id(), r->topic()->name);
    Unlink(r);
    r->Wait(r->run_at() > now_us ? JobState::kDelayed : JobState::kReady);
    Link(r, now_us);
  }

  // The results of the jobs `id` named in JobOptions::after that are kept
  // done now.
  void AddDependencyResults(absl::string_view id, Lease* lease)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const std::string& dependency : dependencies_.After(id)) {
      const JobRecord* d = Find(dependency);
      if (d != nullptr && d->state() == JobState::kDone) {
        lease->dependency_results[dependency] = std::string(d->result());
      }
    }
  }

  // Sends `r` dead with `error` (a dependency's failure).
  void Kill(JobRecord* r, absl::string_view error, int64_t now_us) {
    Unlink(r);
    r->set_last_error(error);
    r->Die(next_death_++, now_us);
    Link(r, now_us);
    counts_.Count(r->topic()->name, now_us, internal::CountOfDependencyDeath());
    internal::NoteSettled(settled_, Settled::Kind::kDead, r->id(),
                          r->topic()->name, error);
  }

  // The common call: one look in the pool both checks the id and places the
  // record.
  absl::Status AddOne(const NewJob& job, absl::Time now) {
    if (Held(job.id)) return internal::IdInUse(job.id);
    JobRecord* added = Place(job, now);
    if (added == nullptr) return internal::IdInUse(job.id);
    Link(added, MicrosOf(now));
    CountAdded({&job, 1}, now);
    return absl::OkStatus();
  }

  // A record for `job` in the pool, not yet linked; null if the id is taken.
  JobRecord* Place(const NewJob& job, absl::Time now) {
    return jobs_.Emplace(job.id, [&] {
      return JobRecord::Make(job, TopicFor(job.topic, now), next_seq_++, now);
    });
  }

  // AlreadyExists when an id is taken, or given twice in `jobs`.
  absl::Status CheckIdsFree(absl::Span<const NewJob> jobs) {
    absl::flat_hash_set<absl::string_view> batch;
    batch.reserve(jobs.size());
    for (const NewJob& job : jobs) {
      if (Find(job.id) != nullptr || Held(job.id) ||
          !batch.insert(job.id).second) {
        return internal::IdInUse(job.id);
      }
    }
    return absl::OkStatus();
  }

  JobRecord* Find(absl::string_view id) { return jobs_.Find(id); }

  // The record reserved under `token`, or null.
  JobRecord* Current(absl::string_view id, uint64_t token) {
    JobRecord* r = Find(id);
    if (r == nullptr || r->state() != JobState::kReserved ||
        r->token() != token) {
      return nullptr;
    }
    return r;
  }

  // Moves a job that is due at `now_us`: a delayed one to ready, an expired
  // reservation to ready or, with its attempts used up, to dead; one whose
  // expiry came (and would otherwise be ready or delayed) lapses. Returns
  // what happened.
  Transition MoveDue(JobRecord* r, int64_t now_us) {
    const JobState state = r->state();
    Transition::Kind kind;
    if (state == JobState::kReserved && r->attempts() >= r->max_attempts()) {
      kind = Transition::Kind::kDead;
    } else if (r->expire_at() <= now_us) {
      kind = r->discard_expired() ? Transition::Kind::kDiscarded
                                  : Transition::Kind::kLapsed;
    } else {
      kind = state == JobState::kDelayed ? Transition::Kind::kPromoted
                                         : Transition::Kind::kExpired;
    }
    Transition t = TransitionOf(*r, kind);
    counts_.Count(t.topic, now_us, internal::CountOfMove(kind));
    if (kind == Transition::Kind::kDiscarded) {
      HoldId(*r, now_us);
      Erase(r, now_us);
      return t;
    }
    Unlink(r);
    if (kind == Transition::Kind::kDead || kind == Transition::Kind::kLapsed) {
      r->set_last_error(kind == Transition::Kind::kDead
                            ? internal::kLeaseExpired
                            : internal::kJobExpired);
      r->Die(next_death_++, now_us);
    } else {
      r->Wait(JobState::kReady);
    }
    Link(r, now_us);
    if (r->state() == JobState::kDead)
      Settle(r->id(), Outcome::kFailed, now_us);
    return t;
  }

  // Lets the done jobs of `t` whose time is up at `now_us` leave, then the
  // ones due to leave soonest while more than `keep_at_most` are kept.
  void TrimDone(TopicIndex* t, int keep_at_most, int64_t now_us) {
    while (!t->done.empty() &&
           (t->done.begin()->leave_at <= now_us ||
            t->done.size() > static_cast<size_t>(keep_at_most))) {
      Erase(t->done.begin()->record, now_us);
    }
  }

  // Lets every done job whose time is up at `now_us` leave the store.
  void DropLeavingDone(int64_t now_us) {
    while (!leaving_.empty() && leaving_.begin()->leave_at <= now_us) {
      Erase(leaving_.begin()->record, now_us);
    }
  }

  // Keeps the id of a job that leaves the store at `now_us` held for its
  // dedup window.
  void HoldId(const JobRecord& r, int64_t now_us) {
    if (r.unique_for() <= 0) return;
    const int64_t until = DeadlineAfter(now_us, r.unique_for());
    auto [it, added] = held_.try_emplace(std::string(r.id()), until);
    if (!added) {
      held_order_.erase({it->second, it->first});
      it->second = until;
    }
    held_order_.insert({until, it->first});
  }

  // Whether a dedup window holds `id` (those that passed were dropped).
  bool Held(absl::string_view id) const {
    return !held_.empty() && held_.contains(id);
  }

  // Frees the ids whose windows end at or before `now_us`.
  void DropPassedHolds(int64_t now_us) {
    while (!held_order_.empty() && held_order_.begin()->first <= now_us) {
      held_.erase(held_order_.begin()->second);
      held_order_.erase(held_order_.begin());
    }
  }

  static Transition TransitionOf(const JobRecord& r, Transition::Kind kind) {
    Transition t;
    t.kind = kind;
    t.id = std::string(r.id());
    t.topic = r.topic()->name;
    t.attempts = r.attempts();
    return t;
  }

  TopicIndex* TopicFor(absl::string_view topic, absl::Time now) {
    auto it = topics_.find(topic);
    if (it != topics_.end()) return it->second.get();
    auto index =
        std::make_unique<TopicIndex>(std::string(topic), MicrosOf(now));
    TopicIndex* raw = index.get();
    topics_.emplace(raw->name, std::move(index));
    return raw;
  }

  void Revive(JobRecord* r, absl::Time now) {
    Unlink(r);
    r->clear_expiry();
    r->set_attempts(0);
    r->set_run_at(MicrosOf(now));
    r->Wait(JobState::kReady);
    Link(r, MicrosOf(now));
  }

  // Puts `r` in the index of its state. `now_us` is the call's time: a
  // wheel that is empty starts again from it (see RestartIfEmpty()).
  void Link(JobRecord* r, int64_t now_us) {
    TopicIndex* t = r->topic();
    switch (r->state()) {
      case JobState::kReady:
        t->ready.insert({r->run_at(), r->priority(), r});
        if (r->expire_at() == kNever) return;
        LinkExpiry(r, now_us);
        break;
      case JobState::kDelayed:
        RestartIfEmpty(t->delayed, now_us);
        r->set_timer(t->delayed.Insert(r));
        if (r->expire_at() != kNever) LinkExpiry(r, now_us);
        break;
      case JobState::kReserved:
        RestartIfEmpty(t->reserved, now_us);
        lease_timers_[r] = t->reserved.Insert(r);
        break;
      case JobState::kDead:
        t->dead.insert({r->death_seq(), r});
        return;
      case JobState::kDone:
        t->done.insert({r->leave_at(), r->done_seq(), r});
        leaving_.insert({r->leave_at(), r->done_seq(), r});
        return;
      case JobState::kWaiting:
        t->waiting.insert({r->seq(), r});
        return;
    }
    ListDue(t);
  }

  void LinkExpiry(JobRecord* r, int64_t now_us) {
    TopicIndex* t = r->topic();
    RestartIfEmpty(t->expiring, now_us);
    r->set_expiry_timer(t->expiring.Insert(r));
  }

  void Unlink(JobRecord* r) {
    TopicIndex* t = r->topic();
    switch (r->state()) {
      case JobState::kReady:
        t->ready.erase({r->run_at(), r->priority(), r});
        if (r->expire_at() == kNever) return;
        t->expiring.Cancel(r->expiry_timer());
        break;
      case JobState::kDelayed:
        t->delayed.Cancel(r->timer());
        if (r->expire_at() != kNever) t->expiring.Cancel(r->expiry_timer());
        break;
      case JobState::kReserved: {
        auto lease = lease_timers_.find(r);
        t->reserved.Cancel(lease->second);
        lease_timers_.erase(lease);
        break;
      }
      case JobState::kDead:
        t->dead.erase({r->death_seq(), r});
        return;
      case JobState::kDone:
        t->done.erase({r->leave_at(), r->done_seq(), r});
        leaving_.erase({r->leave_at(), r->done_seq(), r});
        return;
      case JobState::kWaiting:
        t->waiting.erase({r->seq(), r});
        return;
    }
    ListDue(t);
  }

  // Keeps the topic's entry in due_topics_ at its current next due time.
  void ListDue(TopicIndex* t) {
    const int64_t due = t->NextDue();
    if (due == t->listed_due) return;
    if (t->listed_due != kNoTime) due_topics_.erase({t->listed_due, t});
    if (due != kNoTime) due_topics_.insert({due, t});
    t->listed_due = due;
  }

  // The job as the API shows it, with who holds it while reserved.
  Job JobOf(const JobRecord& r) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Job job = r.ToJob();
    const absl::Span<const std::string> after = dependencies_.After(r.id());
    job.after.assign(after.begin(), after.end());
    if (r.state() != JobState::kReserved) return job;
    auto held = holdings_.find(&r);
    if (held != holdings_.end() && held->second.token == r.token()) {
      job.holder = held->second.holder;
      job.reserved_at = TimeOf(held->second.reserved_at);
    }
    return job;
  }

  // Removes the job from the store, as it leaves unacknowledged unless its
  // dependants were settled already (Ack()), and settles the jobs that wait
  // for it.
  void Erase(JobRecord* r, int64_t now_us) {
    const std::string id(r->id());
    EraseRecord(r);
    Settle(id, Outcome::kGone, now_us);
  }

  // Removes the job from the store, and from the lists of the jobs it waits
  // for; drops its topic when that was its last.
  void EraseRecord(JobRecord* r) {
    holdings_.erase(r);
    if (r->state() == JobState::kWaiting) dependencies_.Forget(r->id());
    batches_.Drop(r->id());
    dependencies_.Drop(r->id());
    Unlink(r);
    TopicIndex* t = r->topic();
    jobs_.Erase(r);  // destroys *r
    if (t->empty()) topics_.erase(t->name);
  }

  // A limit's time for ReserveReport::limited_until.
  static absl::Time LimitTime(int64_t us) {
    return us == internal::kUntilReleased ? absl::InfiniteFuture() : TimeOf(us);
  }

  // Who made a record's last lease and when (µs). Apart from the packed
  // record, which keeps only what every job needs; an entry counts while
  // its record is reserved under its token, so a lease that ended leaves
  // nothing to clear (a record's entry goes with the record).
  struct Holding {
    uint64_t token = 0;
    std::string holder;
    int64_t reserved_at = 0;
  };

  // Every private method above requires mu_ held.
  internal::Mutex mu_;
  IdIndex jobs_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<const JobRecord*, Holding> holdings_ ABSL_GUARDED_BY(mu_);
  // Keyed by the index's own copy of the name.
  absl::btree_map<absl::string_view, std::unique_ptr<TopicIndex>> topics_
      ABSL_GUARDED_BY(mu_);
  // (next due time, topic) of every topic with a delayed job, a lease or an
  // expiry.
  absl::btree_set<std::pair<int64_t, TopicIndex*>> due_topics_
      ABSL_GUARDED_BY(mu_);
  // The lease timer of each reserved job. A delayed job's timer id lives in
  // its record, in the word a reserved one needs for its token; reserved
  // jobs are few (one per lease held), so theirs live here, and a record
  // stays at the size a million delayed jobs are counted in.
  absl::flat_hash_map<const JobRecord*, TimerId> lease_timers_
      ABSL_GUARDED_BY(mu_);
  absl::btree_set<std::string> paused_ ABSL_GUARDED_BY(mu_);
  // Limited topics: the limit and its token bucket (see limit_gate.h).
  struct LimitState {
    TopicLimit limit;
    int64_t tat_us = internal::kFreshBucket;
  };
  absl::btree_map<std::string, LimitState, std::less<>> limits_
      ABSL_GUARDED_BY(mu_);
  // Ids held by dedup windows: when each is free again, and the same
  // ordered by that time so passed windows are dropped from the front (the
  // views name held_'s keys, which a node map never moves).
  absl::node_hash_map<std::string, int64_t> held_ ABSL_GUARDED_BY(mu_);
  absl::btree_set<std::pair<int64_t, absl::string_view>> held_order_
      ABSL_GUARDED_BY(mu_);
  absl::btree_map<std::string, ScheduleRecord, std::less<>> schedules_
      ABSL_GUARDED_BY(mu_);
  memory_internal::CountBook counts_ ABSL_GUARDED_BY(mu_);
  // The event log has a lock of its own: it is written after the
  // transitions, and must not hold up the next one.
  internal::Mutex events_mu_;
  memory_internal::EventRing events_ ABSL_GUARDED_BY(events_mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t next_death_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t next_done_ ABSL_GUARDED_BY(mu_) = 1;
  // Every done job, in the order they leave the store.
  absl::btree_set<DoneKey> leaving_ ABSL_GUARDED_BY(mu_);
  DependencyBook dependencies_ ABSL_GUARDED_BY(mu_);
  BatchBook batches_ ABSL_GUARDED_BY(mu_);
  // Where the running call reports the jobs it settles (null: nowhere).
  std::vector<Settled>* settled_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace

std::unique_ptr<Backend> NewMemoryBackend(const MemoryOptions& options) {
  return std::make_unique<MemoryBackend>(options);
}

}  // namespace delayq
