// Copyright delayq authors.
//
// NewsRecorder — collects the StoreNews a subscription delivers
// (Backend::Subscribe()), as text a test can compare and print:
// "ready(TOPIC)", "due(+DURATION)" (after the test's origin), "resync" and
// "schedules".
//
//   NewsRecorder recorder(kT0);
//   auto subscription = backend->Subscribe(recorder.Callback());
//   EXPECT_EQ(recorder.Next(), NewsRecorder::Ready("mail"));

#ifndef DELAYQ_TESTS_TESTING_NEWS_RECORDER_H_
#define DELAYQ_TESTS_TESTING_NEWS_RECORDER_H_

#include <deque>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "delayq/backend.h"

namespace delayq {
namespace testing {

class NewsRecorder {
 public:
  // Due times are written relative to `origin`.
  explicit NewsRecorder(absl::Time origin) : origin_(origin) {}

  static std::string Ready(absl::string_view topic) {
    return absl::StrCat("ready(", topic, ")");
  }
  static std::string Due(absl::Duration after_origin) {
    return absl::StrCat("due(+", absl::FormatDuration(after_origin), ")");
  }
  static std::string Resync() { return "resync"; }
  static std::string Schedules() { return "schedules"; }

  std::string Describe(const StoreNews& n) const {
    switch (n.kind) {
      case StoreNews::Kind::kReady:
        return Ready(n.topic);
      case StoreNews::Kind::kDue:
        return Due(n.at - origin_);
      case StoreNews::Kind::kResync:
        return Resync();
      case StoreNews::Kind::kSchedules:
        return Schedules();
    }
    return "?";
  }

  NewsCallback Callback() {
    return [this](const StoreNews& n) {
      absl::MutexLock lock(&mu_);
      news_.push_back(Describe(n));
    };
  }

  // The next news, or "" when none comes within `wait` (real time).
  std::string Next(absl::Duration wait = absl::Seconds(5)) {
    absl::MutexLock lock(&mu_);
    auto any = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !news_.empty();
    };
    if (!mu_.AwaitWithTimeout(absl::Condition(&any), wait)) return "";
    std::string n = news_.front();
    news_.pop_front();
    return n;
  }

 private:
  const absl::Time origin_;
  absl::Mutex mu_;
  std::deque<std::string> news_ ABSL_GUARDED_BY(mu_);
};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_NEWS_RECORDER_H_
