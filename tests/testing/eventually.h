// Copyright delayq authors.
//
// Eventually() — waits in real time for a condition that another thread or
// process makes true: checks `done` every `poll` until it holds or `limit`
// has passed, and once more at the end. For waits on a simulated clock, or
// on something a condition variable announces, use those instead.

#ifndef DELAYQ_TESTS_TESTING_EVENTUALLY_H_
#define DELAYQ_TESTS_TESTING_EVENTUALLY_H_

#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace delayq {
namespace testing {

// Whether `done` held within `limit`.
inline bool Eventually(absl::Duration limit, const std::function<bool()>& done,
                       absl::Duration poll = absl::Milliseconds(50)) {
  const absl::Time deadline = absl::Now() + limit;
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(poll);
  }
  return done();
}

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_EVENTUALLY_H_
