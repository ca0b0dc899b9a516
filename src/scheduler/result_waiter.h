// Copyright delayq authors.
//
// ResultWaiter — Scheduler::WaitForResult(): looks at a job in the store
// until it has finished. The job may be worked by any process, so the
// waiter polls; jobs this process acknowledges or fails wake it at once.

#ifndef DELAYQ_SRC_SCHEDULER_RESULT_WAITER_H_
#define DELAYQ_SRC_SCHEDULER_RESULT_WAITER_H_

#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "delayq/clock.h"
#include "delayq/job.h"

namespace delayq {
namespace internal {

class ResultWaiter {
 public:
  // Reads a job from the store.
  using Getter = std::function<absl::StatusOr<Job>(absl::string_view id)>;

  ResultWaiter(Clock& clock, Getter get);

  // A job of this process was acknowledged or failed: wakes every waiter.
  void JobsFinished();

  // See Scheduler::WaitForResult().
  absl::StatusOr<Job> Wait(absl::string_view id, absl::Duration timeout,
                           absl::Duration poll);

 private:
  Clock& clock_;
  Getter get_;
  absl::Mutex mu_;
  uint64_t finished_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace internal
}  // namespace delayq

#endif  // DELAYQ_SRC_SCHEDULER_RESULT_WAITER_H_
