// Copyright delayq authors.
//
// Jobs that wait for others, in the SQLite store (schema.cc, versions 13
// and 17): a row of `dependencies` per dependency still pending, settled in
// the write transaction of the dependency's ack, death or departure; and
// rows of `job_after`, what the job named, kept for its life.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "backends/sqlite/internal/backend_impl.h"
#include "backends/sqlite/internal/schema.h"
#include "src/common/contract_errors.h"
#include "src/common/settled_list.h"
#include "src/common/status_macros.h"
#include "src/common/transition_counts.h"

namespace delayq {
namespace sqlite_internal {

absl::Status SqliteBackend::CheckDependencies(absl::Span<const NewJob> jobs) {
  absl::flat_hash_set<absl::string_view> earlier;
  for (const NewJob& job : jobs) {
    for (const std::string& dependency : job.after) {
      if (earlier.contains(dependency)) continue;
      ScopedReset reset(s_.state_of.get());
      s_.state_of->BindText(1, dependency);
      DQ_ASSIGN_OR_RETURN(bool row, s_.state_of->Step());
      if (!row) return internal::NoSuchDependency(job.id, dependency);
    }
    earlier.insert(job.id);
  }
  return absl::OkStatus();
}

absl::Status SqliteBackend::AwaitDependencies(const NewJob& job,
                                              int64_t now_us) {
  // The list first: a job its policy deletes at once takes it along.
  for (size_t pos = 0; pos < job.after.size(); ++pos) {
    ScopedReset reset(s_.after_add.get());
    s_.after_add->BindText(1, job.id);
    s_.after_add->BindInt64(2, static_cast<int64_t>(pos));
    s_.after_add->BindText(3, job.after[pos]);
    DQ_RETURN_IF_ERROR(s_.after_add->Run().status());
  }
  bool waits = false;
  for (const std::string& dependency : job.after) {
    int64_t state = -1;  // gone: an earlier job of the batch that went
    {
      ScopedReset reset(s_.state_of.get());
      s_.state_of->BindText(1, dependency);
      DQ_ASSIGN_OR_RETURN(bool row, s_.state_of->Step());
      if (row) state = s_.state_of->Int64(1);
    }
    if (state == kStateDone) continue;
    if (state != -1 && state != kStateDead) {
      ScopedReset reset(s_.depend_on.get());
      s_.depend_on->BindText(1, dependency);
      s_.depend_on->BindText(2, job.id);
      DQ_RETURN_IF_ERROR(s_.depend_on->Run().status());
      jobs_wait_ = true;
      waits = true;
      continue;
    }
    if (job.on_dependency_failure == DependencyFailure::kRun) continue;
    if (job.on_dependency_failure == DependencyFailure::kCancel) {
      return DropWaiter(job.id, now_us);
    }
    int64_t seq;
    {
      ScopedReset reset(s_.state_of.get());
      s_.state_of->BindText(1, job.id);
      DQ_ASSIGN_OR_RETURN(bool row, s_.state_of->Step());
      if (!row) return internal::NoSuchJob(job.id);
      seq = s_.state_of->Int64(0);
    }
    {
      ScopedReset reset(s_.forget_waiter.get());
      s_.forget_waiter->BindText(1, job.id);
      DQ_RETURN_IF_ERROR(s_.forget_waiter->Run().status());
    }
    return KillWaiter(seq, job.topic,
                      state == kStateDead
                          ? internal::DependencyFailed(dependency)
                          : internal::DependencyCancelled(dependency),
                      now_us);
  }
  if (!waits) return absl::OkStatus();
  ScopedReset reset(s_.wait.get());
  s_.wait->BindText(1, job.id);
  s_.wait->BindInt64(2, static_cast<int64_t>(job.on_dependency_failure));
  return s_.wait->Run().status();
}

absl::Status SqliteBackend::ReadAfter(
    int64_t after_count, Job* job,
    std::map<std::string, std::string>* results) {
  if (after_count <= 0) return absl::OkStatus();
  ScopedReset reset(s_.after_of.get());
  s_.after_of->BindText(1, job->id);
  while (true) {
    DQ_ASSIGN_OR_RETURN(bool row, s_.after_of->Step());
    if (!row) return absl::OkStatus();
    job->after.push_back(s_.after_of->Text(0));
    if (results != nullptr && s_.after_of->Int64(1) != 0) {
      (*results)[job->after.back()] = s_.after_of->Text(2);
    }
  }
}

absl::StatusOr<bool> SqliteBackend::AnyJobWaits() {
  if (jobs_wait_.has_value()) return *jobs_wait_;
  ScopedReset reset(s_.any_dependency.get());
  DQ_ASSIGN_OR_RETURN(bool row, s_.any_dependency->Step());
  jobs_wait_ = row && s_.any_dependency->Int64(0) != 0;
  return *jobs_wait_;
}

absl::Status SqliteBackend::SettleDependants(absl::string_view id,
                                             DependencyOutcome outcome,
                                             int64_t now_us) {
  // Most stores have no job that waits: then an ack, death or departure
  // has nobody to settle, and a transaction of many looks once.
  DQ_ASSIGN_OR_RETURN(bool any_waits, AnyJobWaits());
  if (!any_waits) return absl::OkStatus();
  // A list of work rather than recursion: a long chain cannot exhaust the
  // stack.
  std::vector<std::pair<std::string, DependencyOutcome>> work;
  work.emplace_back(std::string(id), outcome);
  while (!work.empty()) {
    const auto [dependency, what] = std::move(work.back());
    work.pop_back();
    DQ_RETURN_IF_ERROR(FinishInBatch(dependency, what, now_us));
    std::vector<std::string> waiters;
    {
      ScopedReset reset(s_.dependants.get());
      s_.dependants->BindText(1, dependency);
      while (true) {
        DQ_ASSIGN_OR_RETURN(bool row, s_.dependants->Step());
        if (!row) break;
        waiters.push_back(s_.dependants->Text(0));
      }
    }
    for (const std::string& w : waiters) {
      int64_t seq, run_at, policy;
      bool still_waits;
      std::string topic;
      {
        ScopedReset reset(s_.waiter.get());
        s_.waiter->BindText(1, w);
        DQ_ASSIGN_OR_RETURN(bool row, s_.waiter->Step());
        if (!row) continue;
        seq = s_.waiter->Int64(0);
        topic = s_.waiter->Text(1);
        run_at = s_.waiter->Int64(2);
        policy = s_.waiter->Int64(3);
        still_waits = s_.waiter->Int64(4) != 0;
      }
      const auto on_failure = static_cast<DependencyFailure>(policy);
      if (what == DependencyOutcome::kMet ||
          on_failure == DependencyFailure::kRun) {
        if (still_waits) continue;
        DQ_RETURN_IF_ERROR(ReleaseWaiter(w, seq, topic, run_at, now_us));
        continue;
      }
      if (on_failure == DependencyFailure::kCancel) {
        DQ_RETURN_IF_ERROR(DropWaiter(w, now_us));
        internal::NoteSettled(settled_, Settled::Kind::kCancelled, w, topic);
        work.emplace_back(w, DependencyOutcome::kGone);
        continue;
      }
      {
        ScopedReset reset(s_.forget_waiter.get());
        s_.forget_waiter->BindText(1, w);
        DQ_RETURN_IF_ERROR(s_.forget_waiter->Run().status());
      }
      const std::string error = what == DependencyOutcome::kFailed
                                    ? internal::DependencyFailed(dependency)
                                    : internal::DependencyCancelled(dependency);
      DQ_RETURN_IF_ERROR(KillWaiter(seq, topic, error, now_us));
      internal::NoteSettled(settled_, Settled::Kind::kDead, w, topic, error);
      work.emplace_back(w, DependencyOutcome::kFailed);
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteBackend::ReleaseWaiter(absl::string_view id, int64_t seq,
                                          absl::string_view topic,
                                          int64_t run_at_us, int64_t now_us) {
  const bool ready = run_at_us <= now_us;
  internal::NoteSettled(settled_, internal::ReleasedAs(run_at_us, now_us), id,
                        topic);
  ScopedReset reset(s_.release_waiter.get());
  s_.release_waiter->BindInt64(1, seq);
  s_.release_waiter->BindInt64(2, ready ? kStateReady : kStateDelayed);
  DQ_ASSIGN_OR_RETURN(bool row, s_.release_waiter->Step());
  if (row && !s_.release_waiter->IsNull(0)) {
    NoteDue(s_.release_waiter->Int64(0));
  }
  DQ_RETURN_IF_ERROR(s_.release_waiter->Run().status());
  if (ready) NoteMadeReady(topic);
  return absl::OkStatus();
}

absl::Status SqliteBackend::KillWaiter(int64_t seq, absl::string_view topic,
                                       absl::string_view error,
                                       int64_t now_us) {
  NoteCount(topic, internal::CountOfDependencyDeath());
  DQ_ASSIGN_OR_RETURN(int64_t counter, LoadCounter());
  {
    ScopedReset reset(s_.make_dead.get());
    s_.make_dead->BindInt64(1, seq);
    s_.make_dead->BindInt64(2, counter + 1);
    s_.make_dead->BindText(3, error);
    s_.make_dead->BindInt64(4, now_us);
    DQ_RETURN_IF_ERROR(s_.make_dead->Run().status());
  }
  return SaveCounter(counter + 1);
}

absl::Status SqliteBackend::DropWaiter(absl::string_view id, int64_t now_us) {
  {
    ScopedReset reset(s_.forget_waiter.get());
    s_.forget_waiter->BindText(1, id);
    DQ_RETURN_IF_ERROR(s_.forget_waiter->Run().status());
  }
  int64_t unique_for_us = 0;
  {
    ScopedReset reset(s_.cancel.get());
    s_.cancel->BindText(1, id);
    DQ_ASSIGN_OR_RETURN(bool row, s_.cancel->Step());
    if (!row) return absl::OkStatus();
    unique_for_us = s_.cancel->Int64(0);
    DQ_RETURN_IF_ERROR(s_.cancel->Run().status());
  }
  return HoldId(id, unique_for_us, now_us);
}

}  // namespace sqlite_internal
}  // namespace delayq
