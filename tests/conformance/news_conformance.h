// Copyright delayq authors.
//
// The news every store that has any announces (Backend::Subscribe()), run
// against SQLite and Redis. One backend subscribes; a second one on the
// same store, as another process would, changes it, and the news must
// arrive: edges only, with the exact times. "No news" is checked without
// sleeping: a sentinel job on a fresh topic is added after the change, and
// its kReady must be the next news.
//
// A store's test file instantiates the suite with a NewsStore, and may
// derive its own fixture from NewsConformanceTest for what only it does.

#ifndef DELAYQ_TESTS_CONFORMANCE_NEWS_CONFORMANCE_H_
#define DELAYQ_TESTS_CONFORMANCE_NEWS_CONFORMANCE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "gtest/gtest.h"
#include "tests/testing/news_recorder.h"

namespace delayq {
namespace testing {

// Two backends on one new store, and where it is (a file's path, a Redis
// namespace) for the store's own tests.
struct NewsPair {
  std::unique_ptr<Backend> subscriber;
  std::unique_ptr<Backend> other;  // "another process"
  std::string where;
};

// OpenNewsPair()
//
// Two backends that `open` makes on one store at `where`; an empty pair
// (and a test failure) when either cannot be opened.
NewsPair OpenNewsPair(
    const std::function<absl::StatusOr<std::unique_ptr<Backend>>()>& open,
    std::string where);

struct NewsStore {
  std::string name;
  std::function<NewsPair()> open;
};

class NewsConformanceTest : public ::testing::TestWithParam<NewsStore> {
 protected:
  static const absl::Time kT0;

  void SetUp() override;
  void TearDown() override;

  // The id of the job MakeJob() names `name`. Every id of a test shares
  // the hash tag "{n}", so a store that spreads jobs by id (a sharded Redis
  // namespace, whose shards announce their own edges on channels of their
  // own) keeps a test's jobs and its sentinels in one part, and the news
  // in the order the test expects.
  static std::string Id(absl::string_view name) {
    return absl::StrCat("{n}", name);
  }
  // A job whose id is Id(name).
  static NewJob MakeJob(std::string name, std::string topic,
                        absl::Time run_at = kT0,
                        absl::Duration ttr = absl::Seconds(30),
                        int max_attempts = 3);
  static std::string Ready(absl::string_view topic) {
    return NewsRecorder::Ready(topic);
  }
  static std::string Schedules() { return NewsRecorder::Schedules(); }
  static std::string Due(absl::Duration after_t0) {
    return NewsRecorder::Due(after_t0);
  }

  // Every news that arrives before a sentinel added now, in order; fails
  // the test if the sentinel does not come.
  std::vector<std::string> Settle();
  // One lease of `topic`, taken by the other backend.
  Lease ReserveOne(absl::string_view topic, absl::Time now);

  std::unique_ptr<Backend> subscriber_;
  std::unique_ptr<Backend> store_;  // "another process"
  std::string where_;
  NewsRecorder recorder_{kT0};
  std::unique_ptr<NewsSubscription> subscription_;

 private:
  int sentinels_ = 0;
};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_CONFORMANCE_NEWS_CONFORMANCE_H_
