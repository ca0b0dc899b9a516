// Copyright delayq authors.

#include "src/metrics/instrumented_backend.h"

#include <string>
#include <utility>
#include <vector>

namespace delayq {
namespace internal {
namespace {

const absl::Status& StatusOf(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}

// A BackendWrapper, so that a call this class does not time still reaches
// the store (a wrapper that forgot one would answer it with the Backend
// default, Unimplemented).
class InstrumentedBackend : public BackendWrapper {
 public:
  InstrumentedBackend(std::unique_ptr<Backend> target, Clock& clock,
                      CallObserver observer)
      : BackendWrapper(target.get()),
        owned_(std::move(target)),
        target_(owned_.get()),
        clock_(clock),
        observer_(std::move(observer)) {}

  absl::Status Add(absl::Span<const NewJob> jobs, absl::Time now) override {
    return Timed("add", [&] { return target_->Add(jobs, now); });
  }
  using Backend::Reserve;
  absl::StatusOr<std::vector<Lease>> Reserve(absl::string_view topic, int max,
                                             absl::Time now,
                                             ReserveReport* report) override {
    return Timed("reserve",
                 [&] { return target_->Reserve(topic, max, now, report); });
  }
  using Backend::Ack;
  absl::Status Ack(absl::string_view id, uint64_t token,
                   absl::string_view result, absl::Time now,
                   std::vector<Settled>* settled) override {
    return Timed("ack",
                 [&] { return target_->Ack(id, token, result, now, settled); });
  }
  // Forwarded, so the store's one round trip stays one; timed with the
  // reservation's status (the ack's own is the caller's to report).
  AckReserved AckAndReserve(absl::string_view id, uint64_t token,
                            absl::string_view result, absl::string_view topic,
                            int max, absl::Time now,
                            ReserveReport* report) override {
    const absl::Time start = clock_.Now();
    AckReserved out =
        target_->AckAndReserve(id, token, result, topic, max, now, report);
    observer_("ack_reserve", clock_.Now() - start, out.leases.status());
    return out;
  }
  using Backend::AckBatch;
  absl::StatusOr<std::vector<absl::Status>> AckBatch(
      absl::Span<const Lease> leases, absl::Time now,
      std::vector<Settled>* settled) override {
    return Timed("ack_batch",
                 [&] { return target_->AckBatch(leases, now, settled); });
  }
  using Backend::Fail;
  absl::StatusOr<FailOutcome> Fail(absl::string_view id, uint64_t token,
                                   absl::string_view error, absl::Time retry_at,
                                   absl::Time now,
                                   std::vector<Settled>* settled) override {
    return Timed("fail", [&] {
      return target_->Fail(id, token, error, retry_at, now, settled);
    });
  }
  absl::Status Release(absl::string_view id, uint64_t token, absl::Time run_at,
                       absl::Time now) override {
    return Timed("release",
                 [&] { return target_->Release(id, token, run_at, now); });
  }
  absl::StatusOr<absl::Time> Touch(absl::string_view id, uint64_t token,
                                   absl::Time now) override {
    return Timed("touch", [&] { return target_->Touch(id, token, now); });
  }
  using Backend::Cancel;
  absl::Status Cancel(absl::string_view id, absl::Time now,
                      std::vector<Settled>* settled) override {
    return Timed("cancel", [&] { return target_->Cancel(id, now, settled); });
  }
  absl::StatusOr<Job> Get(absl::string_view id) override {
    return Timed("get", [&] { return target_->Get(id); });
  }
  absl::StatusOr<std::vector<Job>> List(absl::string_view topic, JobState state,
                                        int limit) override {
    return Timed("list", [&] { return target_->List(topic, state, limit); });
  }
  absl::StatusOr<JobPage> ListPage(absl::string_view topic, JobState state,
                                   int limit,
                                   absl::string_view cursor) override {
    return Timed(
        "list", [&] { return target_->ListPage(topic, state, limit, cursor); });
  }
  absl::StatusOr<TopicStats> Stats(absl::string_view topic) override {
    return Timed("stats", [&] { return target_->Stats(topic); });
  }
  absl::StatusOr<std::vector<std::string>> Topics() override {
    return Timed("topics", [&] { return target_->Topics(); });
  }
  absl::StatusOr<int> Kick(absl::string_view topic, int max,
                           absl::Time now) override {
    return Timed("kick", [&] { return target_->Kick(topic, max, now); });
  }
  absl::Status KickJob(absl::string_view id, absl::Time now) override {
    return Timed("kick_job", [&] { return target_->KickJob(id, now); });
  }
  absl::StatusOr<std::vector<std::string>> KickIds(absl::string_view topic,
                                                   int max,
                                                   absl::Time now) override {
    return Timed("kick", [&] { return target_->KickIds(topic, max, now); });
  }
  absl::StatusOr<PromoteResult> PromoteDue(absl::Time now, int limit) override {
    return Timed("promote_due",
                 [&] { return target_->PromoteDue(now, limit); });
  }
  absl::StatusOr<absl::Time> NextDue() override {
    return Timed("next_due", [&] { return target_->NextDue(); });
  }
  absl::Status Replace(const NewJob& job, absl::Time now) override {
    return Timed("replace", [&] { return target_->Replace(job, now); });
  }
  absl::Status SetPaused(absl::string_view topic, bool paused,
                         absl::Time now) override {
    return Timed("set_paused",
                 [&] { return target_->SetPaused(topic, paused, now); });
  }
  absl::StatusOr<std::vector<std::string>> PausedTopics() override {
    return Timed("paused_topics", [&] { return target_->PausedTopics(); });
  }
  absl::Status SetLimit(absl::string_view topic, const TopicLimit& limit,
                        absl::Time now) override {
    return Timed("set_limit",
                 [&] { return target_->SetLimit(topic, limit, now); });
  }
  absl::Status ClearLimit(absl::string_view topic, absl::Time now) override {
    return Timed("clear_limit",
                 [&] { return target_->ClearLimit(topic, now); });
  }
  absl::StatusOr<std::vector<LimitedTopic>> Limits() override {
    return Timed("limits", [&] { return target_->Limits(); });
  }
  absl::Status PutSchedule(const ScheduleRecord& schedule,
                           absl::Time now) override {
    return Timed("put_schedule",
                 [&] { return target_->PutSchedule(schedule, now); });
  }
  absl::Status RemoveSchedule(absl::string_view name, absl::Time now) override {
    return Timed("remove_schedule",
                 [&] { return target_->RemoveSchedule(name, now); });
  }
  absl::StatusOr<std::vector<ScheduleRecord>> ListSchedules() override {
    return Timed("list_schedules", [&] { return target_->ListSchedules(); });
  }
  absl::Status FireSchedule(absl::string_view name, int64_t revision,
                            absl::Time through, absl::Span<const NewJob> jobs,
                            absl::Time now) override {
    return Timed("fire_schedule", [&] {
      return target_->FireSchedule(name, revision, through, jobs, now);
    });
  }
  // A subscription lives as long as the scheduler; it is no call to time
  // (BackendWrapper forwards it).

 private:
  template <typename Call>
  auto Timed(absl::string_view name, Call call) -> decltype(call()) {
    const absl::Time start = clock_.Now();
    auto result = call();
    observer_(name, clock_.Now() - start, StatusOf(result));
    return result;
  }

  const std::unique_ptr<Backend> owned_;
  Backend* const target_;
  Clock& clock_;
  CallObserver observer_;
};

}  // namespace

std::unique_ptr<Backend> InstrumentBackend(std::unique_ptr<Backend> backend,
                                           Clock& clock,
                                           CallObserver observer) {
  return std::make_unique<InstrumentedBackend>(std::move(backend), clock,
                                               std::move(observer));
}

}  // namespace internal
}  // namespace delayq
