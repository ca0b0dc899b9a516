// Copyright delayq authors.
//
// What the scheduler's tests share: a Scheduler on the memory store and a
// simulated clock (SchedulerTest), an event log, and small helpers.

#ifndef DELAYQ_TESTS_SCHEDULER_SCHEDULER_FIXTURE_H_
#define DELAYQ_TESTS_SCHEDULER_SCHEDULER_FIXTURE_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "delayq/memory_backend.h"
#include "delayq/scheduler.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace delayq {

inline const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

inline JobOptions Delayed(absl::Duration delay) {
  JobOptions options;
  options.delay = delay;
  return options;
}

// Enqueues one job on topic "t" under each id and reserves them all.
inline std::vector<Lease> EnqueueAndReserve(
    Scheduler& scheduler, const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    JobOptions options;
    options.id = id;
    EXPECT_OK(scheduler.Enqueue("t", "p", options));
  }
  absl::StatusOr<std::vector<Lease>> leases =
      scheduler.ReserveBatch("t", static_cast<int>(ids.size()));
  EXPECT_TRUE(leases.ok()) << leases.status();
  EXPECT_EQ(leases.ok() ? leases->size() : 0, ids.size());
  return leases.ok() ? *std::move(leases) : std::vector<Lease>();
}

// Records every event, in order.
class EventLog {
 public:
  void Attach(Scheduler& scheduler) {
    scheduler.AddListener([this](const Event& e) {
      absl::MutexLock lock(&mu_);
      events_.push_back(std::string(EventTypeName(e.type)) + ":" + e.id);
    });
  }
  std::vector<std::string> Take() {
    absl::MutexLock lock(&mu_);
    return std::move(events_);
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> events_;
};

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SchedulerOptions options;
    options.clock = &clock_;
    ASSERT_OK_AND_ASSIGN(scheduler_,
                         Scheduler::Create(NewMemoryBackend(), options));
  }

  Lease MustReserve(absl::string_view topic) {
    absl::StatusOr<std::optional<Lease>> lease = scheduler_->Reserve(topic);
    EXPECT_TRUE(lease.ok()) << lease.status();
    EXPECT_TRUE(lease.ok() && lease->has_value()) << "nothing to reserve";
    return lease.ok() && lease->has_value() ? **lease : Lease{};
  }

  bool NothingReady(absl::string_view topic) {
    absl::StatusOr<std::optional<Lease>> lease = scheduler_->Reserve(topic);
    return lease.ok() && !lease->has_value();
  }

  SimulatedClock clock_{kStart};
  std::unique_ptr<Scheduler> scheduler_;
};

}  // namespace delayq

#endif  // DELAYQ_TESTS_SCHEDULER_SCHEDULER_FIXTURE_H_
