// Copyright delayq authors.

#include "src/instrumented_backend.h"

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

class InstrumentedBackend : public Backend {
 public:
  InstrumentedBackend(std::unique_ptr<Backend> target, Clock& clock,
                      CallObserver observer)
      : target_(std::move(target)),
        clock_(clock),
        observer_(std::move(observer)) {}

  std::string Name() const override { return target_->Name(); }

  absl::Status Add(absl::Span<const NewJob> jobs, absl::Time now) override {
    return Timed("add", [&] { return target_->Add(jobs, now); });
  }
  absl::StatusOr<std::vector<Lease>> Reserve(
      absl::string_view topic, int max, absl::Time now,
      std::vector<Transition>* moved) override {
    return Timed("reserve",
                 [&] { return target_->Reserve(topic, max, now, moved); });
  }
  absl::Status Ack(absl::string_view id, uint64_t token,
                   absl::Time now) override {
    return Timed("ack", [&] { return target_->Ack(id, token, now); });
  }
  absl::StatusOr<FailOutcome> Fail(absl::string_view id, uint64_t token,
                                   absl::string_view error, absl::Time retry_at,
                                   absl::Time now) override {
    return Timed(
        "fail", [&] { return target_->Fail(id, token, error, retry_at, now); });
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
  absl::Status Cancel(absl::string_view id, absl::Time now) override {
    return Timed("cancel", [&] { return target_->Cancel(id, now); });
  }
  absl::StatusOr<Job> Get(absl::string_view id) override {
    return Timed("get", [&] { return target_->Get(id); });
  }
  absl::StatusOr<std::vector<Job>> List(absl::string_view topic, JobState state,
                                        int limit) override {
    return Timed("list", [&] { return target_->List(topic, state, limit); });
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
  // A subscription lives as long as the scheduler; it is no call to time.
  absl::StatusOr<std::unique_ptr<NewsSubscription>> Subscribe(
      NewsCallback on_news) override {
    return target_->Subscribe(std::move(on_news));
  }

 private:
  template <typename Call>
  auto Timed(absl::string_view name, Call call) -> decltype(call()) {
    const absl::Time start = clock_.Now();
    auto result = call();
    observer_(name, clock_.Now() - start, StatusOf(result));
    return result;
  }

  std::unique_ptr<Backend> target_;
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
