// Copyright delayq authors.

#include "backends/redis/sharded_backend.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "backends/redis/internal/keys.h"
#include "src/common/contract_errors.h"
#include "src/common/list_cursor.h"
#include "src/common/mutex.h"
#include "src/common/status_macros.h"
#include "src/common/transition_counts.h"

namespace delayq {
namespace {

int64_t DivideRoundingUp(int64_t x, int64_t n) { return (x + n - 1) / n; }

// Whether a is reserved, becomes due, expires, died or leaves before b, as
// List() orders `state` on one shard (see Backend::List()); dead jobs by
// the time they were enqueued, since death order is kept per shard only,
// and done jobs leaving at the same time by when they finished.
bool ListsBefore(JobState state, const Job& a, const Job& b) {
  switch (state) {
    case JobState::kReady:
      if (a.priority != b.priority) return a.priority < b.priority;
      if (a.run_at != b.run_at) return a.run_at < b.run_at;
      return a.enqueued_at < b.enqueued_at;
    case JobState::kDelayed:
      return a.run_at < b.run_at;
    case JobState::kReserved:
      return a.deadline < b.deadline;
    case JobState::kDead:
    case JobState::kWaiting:
      return a.enqueued_at < b.enqueued_at;
    case JobState::kDone: {
      const absl::Time a_leaves = a.finished_at + a.keep_for;
      const absl::Time b_leaves = b.finished_at + b.keep_for;
      if (a_leaves != b_leaves) return a_leaves < b_leaves;
      return a.finished_at < b.finished_at;
    }
  }
  return false;
}

// Hands the news of every shard's subscription to one callback, one call
// at a time, after telling the hints.
struct NewsFanIn {
  internal::Mutex mu;
  NewsCallback on_news ABSL_GUARDED_BY(mu);
};

class ShardedSubscription : public NewsSubscription {
 public:
  ShardedSubscription(std::vector<std::unique_ptr<NewsSubscription>> shards,
                      redis_internal::ReserveHints* hints)
      : shards_(std::move(shards)), hints_(hints) {
    hints_->Activate();
  }
  ~ShardedSubscription() override {
    shards_.clear();  // no callback runs after this
    hints_->Deactivate();
  }

 private:
  std::vector<std::unique_ptr<NewsSubscription>> shards_;
  redis_internal::ReserveHints* hints_;
};

}  // namespace

TopicLimit ShardShareOfLimit(const TopicLimit& limit, int shards) {
  TopicLimit share = limit;
  if (limit.rate > 0) share.period = limit.period * shards;
  share.burst = DivideRoundingUp(limit.burst, shards);
  share.concurrency = DivideRoundingUp(limit.concurrency, shards);
  return share;
}

ShardedRedisBackend::ShardedRedisBackend(
    std::vector<std::unique_ptr<RedisBackend>> shards)
    : shards_(std::move(shards)),
      hints_(static_cast<int>(shards_.size())),
      reserve_calls_(new std::atomic<int64_t>[shards_.size()]) {
  for (size_t k = 0; k < shards_.size(); ++k) reserve_calls_[k] = 0;
}

absl::StatusOr<std::unique_ptr<ShardedRedisBackend>> ShardedRedisBackend::Open(
    const RedisOptions& options) {
  std::vector<std::unique_ptr<RedisBackend>> shards;
  for (int k = 0; k < options.shards; ++k) {
    DQ_ASSIGN_OR_RETURN(std::unique_ptr<RedisBackend> shard,
                        RedisBackend::OpenShard(options, k));
    shards.push_back(std::move(shard));
  }
  return std::unique_ptr<ShardedRedisBackend>(
      new ShardedRedisBackend(std::move(shards)));
}

template <typename T>
std::vector<absl::StatusOr<T>> ShardedRedisBackend::OnEveryShard(
    const std::function<absl::StatusOr<T>(RedisBackend&)>& call) {
  std::vector<absl::StatusOr<T>> out(shards_.size(),
                                     absl::UnknownError("not called"));
  std::vector<std::thread> threads;
  for (size_t k = 1; k < shards_.size(); ++k) {
    threads.emplace_back([&, k] { out[k] = call(*shards_[k]); });
  }
  out[0] = call(*shards_[0]);
  for (std::thread& t : threads) t.join();
  return out;
}

int ShardedRedisBackend::IndexOf(absl::string_view id) const {
  return redis_internal::ShardOfJob(id, static_cast<int>(shards_.size()));
}

RedisBackend& ShardedRedisBackend::ShardOf(absl::string_view id) {
  return *shards_[IndexOf(id)];
}

absl::Status ShardedRedisBackend::CheckAddInOneStep(
    absl::Span<const NewJob> jobs) const {
  for (const NewJob& job : jobs) {
    if (IndexOf(job.id) == IndexOf(jobs.front().id)) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "jobs '", jobs.front().id, "' and '", job.id,
        "' lie on different shards of this sharded namespace: a flow is "
        "stored all or nothing, which a sharded namespace does on one shard "
        "only: give its ids one hash tag (as '{order-17}:render' and "
        "'{order-17}:publish')"));
  }
  return absl::OkStatus();
}

std::vector<std::vector<NewJob>> ShardedRedisBackend::Split(
    absl::Span<const NewJob> jobs) const {
  std::vector<std::vector<NewJob>> groups(shards_.size());
  for (const NewJob& j : jobs) groups[IndexOf(j.id)].push_back(j);
  return groups;
}

void ShardedRedisBackend::NoteStored(int shard, const NewJob& job,
                                     absl::Time now) {
  if (job.run_at <= now) {
    hints_.Ready(shard, job.topic);
  } else {
    hints_.Due(shard, job.run_at);
  }
  // Its lapse is due work too (PromoteDue()).
  if (job.expire_at != absl::InfiniteFuture()) {
    hints_.Due(shard, job.expire_at);
  }
}

void ShardedRedisBackend::NoteMoved(int shard,
                                    const std::vector<Transition>& moved) {
  for (const Transition& t : moved) {
    if (t.kind == Transition::Kind::kPromoted ||
        t.kind == Transition::Kind::kExpired) {
      hints_.Ready(shard, t.topic);
    }
  }
}

absl::Status ShardedRedisBackend::Add(absl::Span<const NewJob> jobs,
                                      absl::Time now) {
  if (jobs.empty()) return absl::OkStatus();
  DQ_RETURN_IF_ERROR(DependenciesOnOneShard(jobs));
  DQ_RETURN_IF_ERROR(BatchesOnOneShard(jobs));
  const std::vector<std::vector<NewJob>> groups = Split(jobs);
  int used = 0, last = 0;
  for (size_t k = 0; k < groups.size(); ++k) {
    if (!groups[k].empty()) ++used, last = static_cast<int>(k);
  }
  if (used == 1) {
    DQ_RETURN_IF_ERROR(shards_[last]->Add(jobs, now));
    for (const NewJob& j : jobs) NoteStored(last, j, now);
    return absl::OkStatus();
  }
  absl::flat_hash_set<absl::string_view> seen;
  for (const NewJob& j : jobs) {
    if (!seen.insert(j.id).second) return internal::IdInUse(j.id);
  }
  return AddAcross(groups, now);
}

// A shard's script settles a job's dependants, and it touches its own slot
// only: so a job and the jobs it waits for must lie on one shard.
absl::Status ShardedRedisBackend::DependenciesOnOneShard(
    absl::Span<const NewJob> jobs) const {
  for (const NewJob& job : jobs) {
    const int shard = IndexOf(job.id);
    for (const std::string& dependency : job.after) {
      if (IndexOf(dependency) == shard) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "job '", job.id, "' waits for '", dependency,
          "', which lies on another shard of this sharded namespace: a job "
          "and the jobs it waits for must lie on one shard, so give their "
          "ids one hash tag (as '{order-17}:mail' and '{order-17}:sms')"));
    }
  }
  return absl::OkStatus();
}

// A shard's scripts count a batch's jobs in its completion job's record,
// which they can reach on their own slot only: so a job and the batch it
// joins must lie on one shard.
absl::Status ShardedRedisBackend::BatchesOnOneShard(
    absl::Span<const NewJob> jobs) const {
  for (const NewJob& job : jobs) {
    if (job.batch.empty() || IndexOf(job.batch) == IndexOf(job.id)) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "job '", job.id, "' joins batch '", job.batch,
        "', which lies on another shard of this sharded namespace: a batch's "
        "jobs and its completion job must lie on one shard, so give their "
        "ids the batch's hash tag (as '{march}' and '{march}:invoice-7')"));
  }
  return absl::OkStatus();
}

absl::Status ShardedRedisBackend::OpenBatch(const NewJob& completion,
                                            absl::Time now) {
  return ShardOf(completion.id).OpenBatch(completion, now);
}

absl::Status ShardedRedisBackend::CloseBatch(absl::string_view id,
                                             absl::Time now,
                                             std::vector<Settled>* settled) {
  return ShardOf(id).CloseBatch(id, now, settled);
}

absl::StatusOr<Batch> ShardedRedisBackend::GetBatch(absl::string_view id) {
  return ShardOf(id).GetBatch(id);
}

absl::Status ShardedRedisBackend::AddAcross(
    const std::vector<std::vector<NewJob>>& groups, absl::Time now) {
  for (size_t k = 0; k < groups.size(); ++k) {
    DQ_RETURN_IF_ERROR(shards_[k]->CheckIdsFree(groups[k], now));
  }
  std::vector<int> written;
  for (size_t k = 0; k < groups.size(); ++k) {
    if (groups[k].empty()) continue;
    const int shard = static_cast<int>(k);
    if (before_shard_write_) before_shard_write_(shard);
    absl::Status s = shards_[k]->Add(groups[k], now);
    // A reply lost on the way back may hide a write that happened.
    if (absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)) {
      written.push_back(shard);
    }
    if (!s.ok()) return Undo(groups, written, std::move(s), now);
    written.push_back(shard);
    for (const NewJob& j : groups[k]) NoteStored(shard, j, now);
  }
  return absl::OkStatus();
}

absl::Status ShardedRedisBackend::Undo(
    const std::vector<std::vector<NewJob>>& groups,
    const std::vector<int>& shards, absl::Status cause, absl::Time now) {
  std::string left;
  for (int k : shards) {
    std::vector<std::string> ids;
    for (const NewJob& j : groups[k]) ids.push_back(j.id);
    absl::StatusOr<int> withdrawn = shards_[k]->Withdraw(ids, now);
    if (!withdrawn.ok()) {
      absl::StrAppend(&left, left.empty() ? "" : ", ", "shard ", k, " (",
                      withdrawn.status().message(), ")");
    }
  }
  if (left.empty()) return cause;
  return absl::UnavailableError(absl::StrCat(
      cause.message(), "; the jobs of this batch that were stored on ", left,
      " could not be deleted again and may still be there"));
}

absl::StatusOr<std::vector<Lease>> ShardedRedisBackend::Reserve(
    absl::string_view topic, int max, absl::Time now, ReserveReport* report) {
  max = std::max(max, 1);
  const redis_internal::ReserveHints::Plan plan = hints_.Begin(topic, now);
  std::vector<Lease> out;
  absl::Status error;
  for (int k : plan.order) {
    const int want = max - static_cast<int>(out.size());
    ReserveReport part;
    if (report != nullptr) part.holder = report->holder;
    ++reserve_calls_[k];
    absl::StatusOr<std::vector<Lease>> leases =
        shards_[k]->Reserve(topic, want, now, &part);
    if (!leases.ok()) {
      error = leases.status();
      continue;
    }
    // The jobs it moved to ready are of this topic: a full reserve keeps
    // the shard's flag anyway, a short one took them all (or the topic is
    // paused, and its resume flags it again).
    for (const Lease& l : *leases) hints_.Due(k, l.deadline);
    if (report != nullptr) {
      for (Transition& t : part.moved) report->moved.push_back(std::move(t));
      for (Settled& s : part.settled) report->settled.push_back(std::move(s));
      if (part.limited_until != absl::InfinitePast()) {
        report->limited_until =
            report->limited_until == absl::InfinitePast()
                ? part.limited_until
                : std::min(report->limited_until, part.limited_until);
      }
    }
    if (!leases->empty()) hints_.Served(topic, k);
    const bool short_of_want = static_cast<int>(leases->size()) < want;
    for (Lease& l : *leases) out.push_back(std::move(l));
    if (!short_of_want) break;
    if (part.limited_until == absl::InfinitePast()) {
      hints_.Drained(topic, k, plan.epochs[k]);
    }
  }
  // Leases already taken are worth more than the error of another shard.
  if (out.empty() && !error.ok()) return error;
  return out;
}

absl::Status ShardedRedisBackend::Ack(absl::string_view id, uint64_t token,
                                      absl::string_view result, absl::Time now,
                                      std::vector<Settled>* settled) {
  return ShardOf(id).Ack(id, token, result, now, settled);
}

absl::StatusOr<std::vector<absl::Status>> ShardedRedisBackend::AckBatch(
    absl::Span<const Lease> leases, absl::Time now,
    std::vector<Settled>* settled) {
  // A shard that cannot be asked answers for its own leases, whether the
  // batch spans shards or not.
  const auto on_shard = [&](int k, absl::Span<const Lease> part) {
    absl::StatusOr<std::vector<absl::Status>> acked =
        shards_[k]->AckBatch(part, now, settled);
    return acked.ok() ? *std::move(acked)
                      : std::vector<absl::Status>(part.size(), acked.status());
  };
  // Copies the leases only when they span shards.
  if (leases.empty()) return std::vector<absl::Status>();
  const int first = IndexOf(leases.front().job.id);
  if (std::all_of(leases.begin(), leases.end(),
                  [&](const Lease& l) { return IndexOf(l.job.id) == first; })) {
    return on_shard(first, leases);
  }
  std::vector<std::vector<Lease>> groups(shards_.size());
  std::vector<std::vector<size_t>> slots(shards_.size());
  for (size_t i = 0; i < leases.size(); ++i) {
    const int k = IndexOf(leases[i].job.id);
    groups[k].push_back(leases[i]);
    slots[k].push_back(i);
  }
  std::vector<absl::Status> out(leases.size());
  for (size_t k = 0; k < shards_.size(); ++k) {
    if (groups[k].empty()) continue;
    std::vector<absl::Status> part = on_shard(static_cast<int>(k), groups[k]);
    for (size_t j = 0; j < slots[k].size(); ++j) {
      out[slots[k][j]] = std::move(part[j]);
    }
  }
  return out;
}

absl::StatusOr<FailOutcome> ShardedRedisBackend::Fail(
    absl::string_view id, uint64_t token, absl::string_view error,
    absl::Time retry_at, absl::Time now, std::vector<Settled>* settled) {
  absl::StatusOr<FailOutcome> out =
      ShardOf(id).Fail(id, token, error, retry_at, now, settled);
  if (out.ok() && *out == FailOutcome::kRetry)
    hints_.Due(IndexOf(id), retry_at);
  return out;
}

absl::Status ShardedRedisBackend::Release(absl::string_view id, uint64_t token,
                                          absl::Time run_at, absl::Time now) {
  DQ_RETURN_IF_ERROR(ShardOf(id).Release(id, token, run_at, now));
  hints_.Due(IndexOf(id), run_at);
  return absl::OkStatus();
}

absl::StatusOr<absl::Time> ShardedRedisBackend::Touch(absl::string_view id,
                                                      uint64_t token,
                                                      absl::Time now) {
  return ShardOf(id).Touch(id, token, now);
}

absl::Status ShardedRedisBackend::Cancel(absl::string_view id, absl::Time now,
                                         std::vector<Settled>* settled) {
  return ShardOf(id).Cancel(id, now, settled);
}

absl::StatusOr<Job> ShardedRedisBackend::Get(absl::string_view id) {
  return ShardOf(id).Get(id);
}

absl::StatusOr<std::vector<Job>> ShardedRedisBackend::List(
    absl::string_view topic, JobState state, int limit) {
  if (limit <= 0) return std::vector<Job>();
  DQ_ASSIGN_OR_RETURN(JobPage page, ListPage(topic, state, limit, ""));
  return std::move(page.jobs);
}

// A page merges the shards' lists, each in its shard's order, taking the
// first of the heads. Orders are kept per shard only (enqueue and death
// order are), so the cursor holds one position per shard: where the page
// left that shard's list ("" for its start).
absl::StatusOr<JobPage> ShardedRedisBackend::ListPage(
    absl::string_view topic, JobState state, int limit,
    absl::string_view cursor) {
  JobPage page;
  if (limit <= 0) return page;
  internal::ListCursor after;
  after.state = state;
  after.parts.resize(shards_.size());
  if (!cursor.empty()) {
    DQ_ASSIGN_OR_RETURN(
        after, internal::DecodeListCursor(cursor, state, shards_.size()));
  }
  // Each shard's next limit + 1 jobs: more than the page takes shows that
  // another page follows.
  std::vector<absl::StatusOr<std::vector<RedisBackend::PlacedJob>>> got =
      OnEveryShard<std::vector<RedisBackend::PlacedJob>>(
          [&](RedisBackend& shard) {
            size_t k = 0;
            while (shards_[k].get() != &shard) ++k;
            return shard.ListAfter(topic, state, limit + 1, after.parts[k]);
          });
  for (const auto& part : got) {
    if (!part.ok()) return part.status();
  }
  std::vector<size_t> at(shards_.size(), 0);
  size_t left = 0;
  for (const auto& part : got) left += part->size();
  while (left > 0) {
    int best = -1;
    for (size_t k = 0; k < got.size(); ++k) {
      if (at[k] == got[k]->size()) continue;
      if (best < 0 || ListsBefore(state, (*got[k])[at[k]].job,
                                  (*got[best])[at[best]].job)) {
        best = static_cast<int>(k);
      }
    }
    if (page.jobs.size() == static_cast<size_t>(limit)) {
      page.next_cursor = internal::EncodeListCursor(after);
      break;
    }
    RedisBackend::PlacedJob& next = (*got[best])[at[best]++];
    after.parts[best] = std::move(next.cursor);
    page.jobs.push_back(std::move(next.job));
    --left;
  }
  return page;
}

absl::StatusOr<TopicStats> ShardedRedisBackend::Stats(absl::string_view topic) {
  TopicStats sum{};
  for (absl::StatusOr<TopicStats>& got : OnEveryShard<TopicStats>(
           [&](RedisBackend& shard) { return shard.Stats(topic); })) {
    DQ_ASSIGN_OR_RETURN(TopicStats s, std::move(got));
    sum.delayed += s.delayed;
    sum.ready += s.ready;
    sum.reserved += s.reserved;
    sum.dead += s.dead;
    sum.done += s.done;
    sum.waiting += s.waiting;
  }
  return sum;
}

absl::StatusOr<std::vector<TopicMinute>> ShardedRedisBackend::Counts(
    absl::Time from, absl::Time to) {
  std::vector<std::vector<TopicMinute>> parts;
  for (auto& got : OnEveryShard<std::vector<TopicMinute>>(
           [&](RedisBackend& shard) { return shard.Counts(from, to); })) {
    DQ_ASSIGN_OR_RETURN(parts.emplace_back(), std::move(got));
  }
  return internal::SumMinutes(parts);
}

absl::Status ShardedRedisBackend::AppendEvents(
    absl::Span<const LoggedEvent> events) {
  std::vector<std::vector<LoggedEvent>> by_shard(shards_.size());
  for (const LoggedEvent& e : events) {
    by_shard[IndexOf(e.id)].push_back(e);
  }
  for (int k = 0; k < shard_count(); ++k) {
    if (by_shard[k].empty()) continue;
    DQ_RETURN_IF_ERROR(shards_[k]->AppendEvents(by_shard[k]));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<LoggedEvent>> ShardedRedisBackend::JobEvents(
    absl::string_view id, int limit) {
  return ShardOf(id).JobEvents(id, limit);
}

absl::StatusOr<std::vector<TopicTotals>> ShardedRedisBackend::CountTotals() {
  std::vector<std::vector<TopicTotals>> parts;
  for (auto& got : OnEveryShard<std::vector<TopicTotals>>(
           [](RedisBackend& shard) { return shard.CountTotals(); })) {
    DQ_ASSIGN_OR_RETURN(parts.emplace_back(), std::move(got));
  }
  return internal::SumTotals(parts);
}

absl::StatusOr<std::vector<std::string>> ShardedRedisBackend::Topics() {
  std::vector<std::string> all;
  for (auto& got : OnEveryShard<std::vector<std::string>>(
           [](RedisBackend& shard) { return shard.Topics(); })) {
    DQ_ASSIGN_OR_RETURN(std::vector<std::string> topics, std::move(got));
    all.insert(all.end(), topics.begin(), topics.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

absl::StatusOr<int> ShardedRedisBackend::Kick(absl::string_view topic, int max,
                                              absl::Time now) {
  DQ_ASSIGN_OR_RETURN(std::vector<std::string> ids, KickIds(topic, max, now));
  return static_cast<int>(ids.size());
}

absl::StatusOr<std::vector<std::string>> ShardedRedisBackend::KickIds(
    absl::string_view topic, int max, absl::Time now) {
  std::vector<std::string> ids;
  for (size_t k = 0; k < shards_.size() && static_cast<int>(ids.size()) < max;
       ++k) {
    DQ_ASSIGN_OR_RETURN(
        std::vector<std::string> moved,
        shards_[k]->KickIds(topic, max - static_cast<int>(ids.size()), now));
    if (!moved.empty()) hints_.Ready(static_cast<int>(k), topic);
    for (std::string& id : moved) ids.push_back(std::move(id));
  }
  return ids;
}

absl::Status ShardedRedisBackend::KickJob(absl::string_view id,
                                          absl::Time now) {
  DQ_RETURN_IF_ERROR(ShardOf(id).KickJob(id, now));
  // The topic is not known here: every topic of the shard may have work.
  hints_.Due(IndexOf(id), now);
  return absl::OkStatus();
}

absl::Status ShardedRedisBackend::PromoteJob(absl::string_view id,
                                             absl::Time now) {
  DQ_RETURN_IF_ERROR(ShardOf(id).PromoteJob(id, now));
  // As for KickJob(): the topic is not known here.
  hints_.Due(IndexOf(id), now);
  return absl::OkStatus();
}

absl::StatusOr<int> ShardedRedisBackend::PurgeDead(
    absl::string_view topic, int max, absl::Time now,
    std::vector<Settled>* settled) {
  int purged = 0;
  for (auto& shard : shards_) {
    if (purged >= max) break;
    DQ_ASSIGN_OR_RETURN(int n,
                        shard->PurgeDead(topic, max - purged, now, settled));
    purged += n;
  }
  return purged;
}

absl::StatusOr<PromoteResult> ShardedRedisBackend::PromoteDue(absl::Time now,
                                                              int limit) {
  limit = std::max(limit, 1);
  PromoteResult result;
  for (size_t k = 0; k < shards_.size(); ++k) {
    const int shard = static_cast<int>(k);
    if (!hints_.MayBeDue(shard, now)) continue;
    const int room = limit - static_cast<int>(result.transitions.size());
    if (room <= 0) {
      result.more = true;  // this shard was not looked at
      break;
    }
    DQ_ASSIGN_OR_RETURN(PromoteResult part, shards_[k]->PromoteDue(now, room));
    NoteMoved(shard, part.transitions);
    result.more = result.more || part.more;
    for (Transition& t : part.transitions) {
      result.transitions.push_back(std::move(t));
    }
    for (Settled& s : part.settled) result.settled.push_back(std::move(s));
  }
  return result;
}

absl::StatusOr<absl::Time> ShardedRedisBackend::NextDue() {
  std::vector<uint64_t> epochs;
  for (int k = 0; k < shard_count(); ++k) {
    epochs.push_back(hints_.HorizonEpoch(k));
  }
  std::vector<absl::StatusOr<absl::Time>> got = OnEveryShard<absl::Time>(
      [](RedisBackend& shard) { return shard.NextDue(); });
  absl::Time earliest = absl::InfiniteFuture();
  absl::Status error;
  for (int k = 0; k < shard_count(); ++k) {
    if (!got[k].ok()) {
      error = got[k].status();
      continue;
    }
    hints_.Horizon(k, *got[k], epochs[k]);
    earliest = std::min(earliest, *got[k]);
  }
  if (!error.ok()) return error;
  return earliest;
}

absl::Status ShardedRedisBackend::Replace(const NewJob& job, absl::Time now) {
  const int shard = IndexOf(job.id);
  DQ_RETURN_IF_ERROR(shards_[shard]->Replace(job, now));
  NoteStored(shard, job, now);
  return absl::OkStatus();
}

absl::Status ShardedRedisBackend::SetPaused(absl::string_view topic,
                                            bool paused, absl::Time now) {
  // Shard 0 last: it answers PausedTopics(), which so reports the change
  // only once every shard has it.
  for (size_t k = shards_.size(); k-- > 0;) {
    DQ_RETURN_IF_ERROR(shards_[k]->SetPaused(topic, paused, now));
  }
  if (!paused) hints_.ReadyEverywhere(topic);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ShardedRedisBackend::PausedTopics() {
  return shards_[0]->PausedTopics();
}

absl::Status ShardedRedisBackend::SetLimit(absl::string_view topic,
                                           const TopicLimit& limit,
                                           absl::Time now) {
  const TopicLimit share =
      ShardShareOfLimit(limit, static_cast<int>(shards_.size()));
  for (auto& shard : shards_) {
    DQ_RETURN_IF_ERROR(shard->SetLimit(topic, share, now));
  }
  DQ_RETURN_IF_ERROR(shards_[0]->RecordAskedLimit(topic, &limit));
  hints_.ReadyEverywhere(topic);
  return absl::OkStatus();
}

absl::Status ShardedRedisBackend::ClearLimit(absl::string_view topic,
                                             absl::Time now) {
  for (auto& shard : shards_) DQ_RETURN_IF_ERROR(shard->ClearLimit(topic, now));
  DQ_RETURN_IF_ERROR(shards_[0]->RecordAskedLimit(topic, nullptr));
  hints_.ReadyEverywhere(topic);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<LimitedTopic>> ShardedRedisBackend::Limits() {
  return shards_[0]->AskedLimits();
}

absl::Status ShardedRedisBackend::PutSchedule(const ScheduleRecord& schedule,
                                              absl::Time now) {
  return shards_[0]->PutSchedule(schedule, now);
}

absl::Status ShardedRedisBackend::RemoveSchedule(absl::string_view name,
                                                 absl::Time now) {
  return shards_[0]->RemoveSchedule(name, now);
}

absl::StatusOr<std::vector<ScheduleRecord>>
ShardedRedisBackend::ListSchedules() {
  return shards_[0]->ListSchedules();
}

absl::Status ShardedRedisBackend::FireSchedule(absl::string_view name,
                                               int64_t revision,
                                               absl::Time through,
                                               absl::Span<const NewJob> jobs,
                                               absl::Time now) {
  // The schedule lives on shard 0, whose fire moves its revision together
  // with the jobs that belong there: that step decides which process
  // enqueues the occurrence, so the jobs of other shards are stored only
  // after it, by the process that won (stored first, a loser's jobs could
  // run before it learns that it lost). Their ids are checked first, so a
  // taken id refuses the fire with nothing changed.
  std::vector<std::vector<NewJob>> groups = Split(jobs);
  std::vector<NewJob> own = std::move(groups[0]);
  std::vector<NewJob> rest;
  for (size_t k = 1; k < groups.size(); ++k) {
    DQ_RETURN_IF_ERROR(shards_[k]->CheckIdsFree(groups[k], now));
    rest.insert(rest.end(), groups[k].begin(), groups[k].end());
  }
  DQ_RETURN_IF_ERROR(
      shards_[0]->FireSchedule(name, revision, through, own, now));
  for (const NewJob& j : own) NoteStored(0, j, now);
  if (rest.empty()) return absl::OkStatus();
  const absl::Status added = Add(rest, now);
  if (added.ok()) return added;
  return absl::UnavailableError(absl::StrCat(
      "schedule '", name, "' fired (its revision moved on), but its jobs on ",
      "other shards than 0 were not stored, and are lost: ", added.message()));
}

absl::StatusOr<std::unique_ptr<NewsSubscription>>
ShardedRedisBackend::Subscribe(NewsCallback on_news) {
  auto fan_in = std::make_shared<NewsFanIn>();
  {
    internal::MutexLock lock(&fan_in->mu);
    fan_in->on_news = std::move(on_news);
  }
  std::vector<std::unique_ptr<NewsSubscription>> subscriptions;
  for (size_t k = 0; k < shards_.size(); ++k) {
    const int shard = static_cast<int>(k);
    redis_internal::ReserveHints* hints = &hints_;
    DQ_ASSIGN_OR_RETURN(
        std::unique_ptr<NewsSubscription> s,
        shards_[k]->Subscribe([shard, hints, fan_in](const StoreNews& news) {
          switch (news.kind) {
            case StoreNews::Kind::kReady:
              hints->Ready(shard, news.topic);
              break;
            case StoreNews::Kind::kDue:
              hints->Due(shard, news.at);
              break;
            case StoreNews::Kind::kResync:
              hints->Resync(shard);
              break;
            case StoreNews::Kind::kSchedules:
              break;
          }
          internal::MutexLock lock(&fan_in->mu);
          fan_in->on_news(news);
        }));
    subscriptions.push_back(std::move(s));
  }
  return std::unique_ptr<NewsSubscription>(
      new ShardedSubscription(std::move(subscriptions), &hints_));
}

}  // namespace delayq
