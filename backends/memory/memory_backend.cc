// Copyright delayq authors.
//
// The in-memory Backend. One mutex guards a job pool (id -> entry) and
// ordered indexes that make every step O(log n): per topic a ready index by
// (priority, run_at, enqueue order), a delayed index by (run_at, enqueue
// order), a reservation index by (deadline, enqueue order) and a dead list in
// death order; across topics a delayed index and a reservation index for
// PromoteDue() and NextDue(). Each entry sits in exactly the indexes of its
// state, so per-topic counts are index sizes.

#include "delayq/memory_backend.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "src/contract_errors.h"
#include "src/mutex.h"

namespace delayq {
namespace {

struct TopicIndex;

struct Entry {
  Job job;
  TopicIndex* topic = nullptr;
  uint64_t seq = 0;        // enqueue order, kept for life
  uint64_t token = 0;      // the current lease, when reserved
  uint64_t death_seq = 0;  // death order, when dead
};

using ReadyKey = std::tuple<int, absl::Time, uint64_t, Entry*>;
using TimeKey = std::tuple<absl::Time, uint64_t, Entry*>;
using DeathKey = std::pair<uint64_t, Entry*>;

struct TopicIndex {
  absl::btree_set<ReadyKey> ready;
  absl::btree_set<TimeKey> delayed;
  absl::btree_set<TimeKey> reserved;
  absl::btree_set<DeathKey> dead;

  bool empty() const {
    return ready.empty() && delayed.empty() && reserved.empty() && dead.empty();
  }
};

ReadyKey ReadyKeyOf(Entry* e) {
  return {e->job.priority, e->job.run_at, e->seq, e};
}
TimeKey DelayedKeyOf(Entry* e) { return {e->job.run_at, e->seq, e}; }
TimeKey ReservedKeyOf(Entry* e) { return {e->job.deadline, e->seq, e}; }

class MemoryBackend : public Backend {
 public:
  std::string Name() const override { return "memory"; }

  absl::Status Add(absl::Span<const NewJob> jobs, absl::Time now) override {
    internal::MutexLock lock(&mu_);
    absl::flat_hash_set<absl::string_view> batch;
    for (const NewJob& job : jobs) {
      if (jobs_.contains(job.id) || !batch.insert(job.id).second) {
        return internal::IdInUse(job.id);
      }
    }
    for (const NewJob& job : jobs) {
      auto entry = std::make_unique<Entry>();
      Job& j = entry->job;
      j.id = job.id;
      j.topic = job.topic;
      j.payload = job.payload;
      j.state = job.run_at > now ? JobState::kDelayed : JobState::kReady;
      j.priority = job.priority;
      j.max_attempts = job.max_attempts;
      j.ttr = job.ttr;
      j.backoff = job.backoff;
      j.enqueued_at = now;
      j.run_at = job.run_at;
      entry->seq = next_seq_++;
      entry->topic = TopicFor(job.topic);
      Link(entry.get());
      jobs_.emplace(job.id, std::move(entry));
    }
    return absl::OkStatus();
  }

  using Backend::Reserve;
  absl::StatusOr<std::vector<Lease>> Reserve(
      absl::string_view topic, int max, absl::Time now,
      std::vector<Transition>* moved) override {
    internal::MutexLock lock(&mu_);
    std::vector<Lease> leases;
    auto it = topics_.find(topic);
    if (it == topics_.end()) return leases;
    TopicIndex* index = it->second.get();
    // What is due in this topic moves first, earliest first, so the ready
    // index alone decides the order.
    for (int n = 0; n < kReservePromoteLimit; ++n) {
      const bool delayed_due = !index->delayed.empty() &&
                               std::get<0>(*index->delayed.begin()) <= now;
      const bool lease_due = !index->reserved.empty() &&
                             std::get<0>(*index->reserved.begin()) <= now;
      if (!delayed_due && !lease_due) break;
      const bool from_delayed =
          delayed_due &&
          (!lease_due || std::get<0>(*index->delayed.begin()) <=
                             std::get<0>(*index->reserved.begin()));
      Entry* e = from_delayed ? std::get<2>(*index->delayed.begin())
                              : std::get<2>(*index->reserved.begin());
      const Transition::Kind kind = MoveDue(e, from_delayed);
      if (moved != nullptr) moved->push_back(TransitionOf(e, kind));
    }
    while (static_cast<int>(leases.size()) < max && !index->ready.empty()) {
      Entry* e = std::get<3>(*index->ready.begin());
      Unlink(e);
      e->job.state = JobState::kReserved;
      e->job.attempts++;
      e->job.deadline = std::max(now, e->job.run_at) + e->job.ttr;
      e->token = next_token_++;
      Link(e);
      Lease lease;
      lease.job = e->job;
      lease.token = e->token;
      lease.deadline = e->job.deadline;
      leases.push_back(std::move(lease));
    }
    return leases;
  }

  absl::Status Ack(absl::string_view id, uint64_t token,
                   absl::Time now) override {
    internal::MutexLock lock(&mu_);
    Entry* e = Current(id, token);
    if (e == nullptr) return internal::StaleLease(id);
    Erase(e);
    return absl::OkStatus();
  }

  absl::StatusOr<FailOutcome> Fail(absl::string_view id, uint64_t token,
                                   absl::string_view error, absl::Time retry_at,
                                   absl::Time now) override {
    internal::MutexLock lock(&mu_);
    Entry* e = Current(id, token);
    if (e == nullptr) return internal::StaleLease(id);
    Unlink(e);
    e->job.last_error = std::string(error);
    if (e->job.attempts < e->job.max_attempts) {
      e->job.run_at = retry_at;
      SetState(e, retry_at > now ? JobState::kDelayed : JobState::kReady);
      Link(e);
      return FailOutcome::kRetry;
    }
    SetState(e, JobState::kDead);
    Link(e);
    return FailOutcome::kDead;
  }

  absl::Status Release(absl::string_view id, uint64_t token, absl::Time run_at,
                       absl::Time now) override {
    internal::MutexLock lock(&mu_);
    Entry* e = Current(id, token);
    if (e == nullptr) return internal::StaleLease(id);
    Unlink(e);
    e->job.attempts = std::max(0, e->job.attempts - 1);
    e->job.run_at = run_at;
    SetState(e, run_at > now ? JobState::kDelayed : JobState::kReady);
    Link(e);
    return absl::OkStatus();
  }

  absl::StatusOr<absl::Time> Touch(absl::string_view id, uint64_t token,
                                   absl::Time now) override {
    internal::MutexLock lock(&mu_);
    Entry* e = Current(id, token);
    if (e == nullptr) return internal::StaleLease(id);
    Unlink(e);
    e->job.deadline = now + e->job.ttr;
    Link(e);
    return e->job.deadline;
  }

  absl::Status Cancel(absl::string_view id, absl::Time now) override {
    internal::MutexLock lock(&mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return internal::NoSuchJob(id);
    Erase(it->second.get());
    return absl::OkStatus();
  }

  absl::StatusOr<Job> Get(absl::string_view id) override {
    internal::MutexLock lock(&mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return internal::NoSuchJob(id);
    return it->second->job;
  }

  absl::StatusOr<std::vector<Job>> List(absl::string_view topic, JobState state,
                                        int limit) override {
    internal::MutexLock lock(&mu_);
    std::vector<Job> out;
    auto it = topics_.find(topic);
    if (it == topics_.end() || limit <= 0) return out;
    const TopicIndex& index = *it->second;
    auto take = [&](const auto& set, auto entry_of) {
      for (const auto& key : set) {
        if (static_cast<int>(out.size()) >= limit) break;
        out.push_back(entry_of(key)->job);
      }
    };
    switch (state) {
      case JobState::kReady:
        take(index.ready, [](const ReadyKey& k) { return std::get<3>(k); });
        break;
      case JobState::kDelayed:
        take(index.delayed, [](const TimeKey& k) { return std::get<2>(k); });
        break;
      case JobState::kReserved:
        take(index.reserved, [](const TimeKey& k) { return std::get<2>(k); });
        break;
      case JobState::kDead:
        take(index.dead, [](const DeathKey& k) { return k.second; });
        break;
    }
    return out;
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
    return stats;
  }

  absl::StatusOr<std::vector<std::string>> Topics() override {
    internal::MutexLock lock(&mu_);
    std::vector<std::string> out;
    out.reserve(topics_.size());
    for (const auto& [name, index] : topics_) out.push_back(name);
    return out;
  }

  absl::StatusOr<int> Kick(absl::string_view topic, int max,
                           absl::Time now) override {
    internal::MutexLock lock(&mu_);
    auto it = topics_.find(topic);
    if (it == topics_.end()) return 0;
    TopicIndex* index = it->second.get();
    int moved = 0;
    while (moved < max && !index->dead.empty()) {
      Revive(index->dead.begin()->second, now);
      ++moved;
    }
    return moved;
  }

  absl::Status KickJob(absl::string_view id, absl::Time now) override {
    internal::MutexLock lock(&mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return internal::NoSuchJob(id);
    if (it->second->job.state != JobState::kDead) {
      return internal::NotDead(id, JobStateName(it->second->job.state));
    }
    Revive(it->second.get(), now);
    return absl::OkStatus();
  }

  absl::StatusOr<PromoteResult> PromoteDue(absl::Time now, int limit) override {
    internal::MutexLock lock(&mu_);
    PromoteResult result;
    while (true) {
      // The earlier of the two heads, if it is due.
      Entry* next = nullptr;
      bool from_delayed = false;
      if (!delayed_.empty() && std::get<0>(*delayed_.begin()) <= now) {
        next = std::get<2>(*delayed_.begin());
        from_delayed = true;
      }
      if (!reserved_.empty() && std::get<0>(*reserved_.begin()) <= now &&
          (next == nullptr ||
           std::get<0>(*reserved_.begin()) < next->job.run_at)) {
        next = std::get<2>(*reserved_.begin());
        from_delayed = false;
      }
      if (next == nullptr) break;
      if (static_cast<int>(result.transitions.size()) >= limit) {
        result.more = true;
        break;
      }
      const Transition::Kind kind = MoveDue(next, from_delayed);
      result.transitions.push_back(TransitionOf(next, kind));
    }
    return result;
  }

  absl::StatusOr<absl::Time> NextDue() override {
    internal::MutexLock lock(&mu_);
    absl::Time next = absl::InfiniteFuture();
    if (!delayed_.empty()) next = std::get<0>(*delayed_.begin());
    if (!reserved_.empty()) {
      next = std::min(next, std::get<0>(*reserved_.begin()));
    }
    return next;
  }

 private:
  // Moves a due job: a delayed one to ready, an expired reservation to ready
  // or dead. Returns what happened.
  Transition::Kind MoveDue(Entry* e, bool from_delayed) {
    if (from_delayed) {
      Move(e, JobState::kReady);
      return Transition::Kind::kPromoted;
    }
    return Expire(e) ? Transition::Kind::kExpired : Transition::Kind::kDead;
  }

  static Transition TransitionOf(const Entry* e, Transition::Kind kind) {
    Transition t;
    t.kind = kind;
    t.id = e->job.id;
    t.topic = e->job.topic;
    t.attempts = e->job.attempts;
    return t;
  }

  // The entry reserved under `token`, or null.
  Entry* Current(absl::string_view id, uint64_t token) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return nullptr;
    Entry* e = it->second.get();
    if (e->job.state != JobState::kReserved || e->token != token) {
      return nullptr;
    }
    return e;
  }

  TopicIndex* TopicFor(absl::string_view topic) {
    auto it = topics_.find(topic);
    if (it != topics_.end()) return it->second.get();
    return topics_.emplace(std::string(topic), std::make_unique<TopicIndex>())
        .first->second.get();
  }

  // Sets the state of an unlinked entry, keeping the per-state fields
  // (deadline, death order) consistent with it.
  void SetState(Entry* e, JobState state) {
    e->job.state = state;
    if (state != JobState::kReserved) e->job.deadline = absl::InfinitePast();
    if (state == JobState::kDead) e->death_seq = next_death_++;
  }

  void Move(Entry* e, JobState state) {
    Unlink(e);
    SetState(e, state);
    Link(e);
  }

  // An expired reservation goes back to ready, or dead when its attempts are
  // used up. Returns true for ready.
  bool Expire(Entry* e) {
    Unlink(e);
    const bool retry = e->job.attempts < e->job.max_attempts;
    if (!retry) e->job.last_error = internal::kLeaseExpired;
    SetState(e, retry ? JobState::kReady : JobState::kDead);
    Link(e);
    return retry;
  }

  void Revive(Entry* e, absl::Time now) {
    Unlink(e);
    e->job.attempts = 0;
    e->job.run_at = now;
    SetState(e, JobState::kReady);
    Link(e);
  }

  void Link(Entry* e) {
    TopicIndex* t = e->topic;
    switch (e->job.state) {
      case JobState::kReady:
        t->ready.insert(ReadyKeyOf(e));
        break;
      case JobState::kDelayed:
        t->delayed.insert(DelayedKeyOf(e));
        delayed_.insert(DelayedKeyOf(e));
        break;
      case JobState::kReserved:
        t->reserved.insert(ReservedKeyOf(e));
        reserved_.insert(ReservedKeyOf(e));
        break;
      case JobState::kDead:
        t->dead.insert({e->death_seq, e});
        break;
    }
  }

  void Unlink(Entry* e) {
    TopicIndex* t = e->topic;
    switch (e->job.state) {
      case JobState::kReady:
        t->ready.erase(ReadyKeyOf(e));
        break;
      case JobState::kDelayed:
        t->delayed.erase(DelayedKeyOf(e));
        delayed_.erase(DelayedKeyOf(e));
        break;
      case JobState::kReserved:
        t->reserved.erase(ReservedKeyOf(e));
        reserved_.erase(ReservedKeyOf(e));
        break;
      case JobState::kDead:
        t->dead.erase({e->death_seq, e});
        break;
    }
  }

  // Removes the job from the store; drops its topic when that was its last.
  void Erase(Entry* e) {
    Unlink(e);
    if (e->topic->empty()) topics_.erase(e->job.topic);
    jobs_.erase(e->job.id);  // destroys *e
  }

  // Every private method above requires mu_ held.
  internal::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<Entry>> jobs_
      ABSL_GUARDED_BY(mu_);
  absl::btree_map<std::string, std::unique_ptr<TopicIndex>> topics_
      ABSL_GUARDED_BY(mu_);
  absl::btree_set<TimeKey> delayed_ ABSL_GUARDED_BY(mu_);
  absl::btree_set<TimeKey> reserved_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t next_token_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t next_death_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace

std::unique_ptr<Backend> NewMemoryBackend() {
  return std::make_unique<MemoryBackend>();
}

}  // namespace delayq
