// Copyright delayq authors.
//
// multiprocess_suite.h — what must hold when several processes share one
// store, checked once for every store that processes share. Each case starts
// tests/testing/worker processes on the store's URL; a store's test
// instantiates the suite with a factory of fresh, empty stores:
//
//   INSTANTIATE_TEST_SUITE_P(
//       Sqlite, MultiProcessTest,
//       ::testing::Values(SharedStore{"sqlite", [] {
//         return "sqlite:" + delayq::testing::FreshDbPath("mp");
//       }}),
//       SharedStoreName);
//
// The cases read the real clock (they run real processes) but assert no
// speed: waits are bounded only so that a lost job fails a case instead of
// hanging it. Where a case proves a mechanism, its setup leaves that
// mechanism the only way to pass (a poll interval of an hour, so only the
// store's news can wake a waiter in time).

#ifndef DELAYQ_TESTS_MULTIPROCESS_MULTIPROCESS_SUITE_H_
#define DELAYQ_TESTS_MULTIPROCESS_MULTIPROCESS_SUITE_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "delayq/backend.h"
#include "delayq/scheduler.h"
#include "gtest/gtest.h"
#include "tests/testing/worker_process.h"

namespace delayq {
namespace testing {

// SharedStore
//
// Names a store and makes the URL of a fresh, EMPTY one on every call.
struct SharedStore {
  std::string name;  // "sqlite", "redis": used in test names
  std::function<std::string()> fresh_url;
  // How long EveryJobHandledExactlyOnce may take to handle its 20,000
  // jobs before it fails (a bound, so that a lost job fails the test rather
  // than hanging it). A store with a network round trip a call needs more
  // on a loaded machine.
  absl::Duration drain_patience = absl::Seconds(90);
};

inline void PrintTo(const SharedStore& store, std::ostream* os) {
  *os << store.name;
}

// The store's name, for INSTANTIATE_TEST_SUITE_P's name generator.
std::string SharedStoreName(const ::testing::TestParamInfo<SharedStore>& info);

// MultiProcessTest
//
// The fixture: `url_` is a fresh store from the parameter's factory.
class MultiProcessTest : public ::testing::TestWithParam<SharedStore> {
 protected:
  void SetUp() override;

  // A worker on the store (see worker_main.cc for `args`); fails the test
  // and returns nullptr when it does not start.
  std::unique_ptr<WorkerProcess> StartWorker(
      const std::vector<std::string>& args = {});

  // This process's own connection to the store.
  std::unique_ptr<Backend> OpenStore();

  // A scheduler of this process on the store that looks at the store on its
  // own only once an hour.
  std::unique_ptr<Scheduler> OpenScheduler();

  std::string url_;
};

// WakeupTest
//
// The wake-up cases: `producer_` is a scheduler of this process that never
// polls; consumers are workers whose schedulers poll once an hour. A store
// that instantiates MultiProcessTest instantiates this one too.
class WakeupTest : public MultiProcessTest {
 protected:
  // How long a consumer may take to hear of anything.
  static constexpr absl::Duration kPatience = absl::Seconds(10);

  void SetUp() override;

  // Starts a consumer process (`mode` reserve, handle or hold, on topic
  // mail) and waits until it has looked at the store and found nothing:
  // from then on only the store's news can bring it a job in time.
  std::unique_ptr<WorkerProcess> StartConsumer(const std::string& mode);

  // Waits for the consumer to get job `id`; prints how long it took.
  void ExpectGot(WorkerProcess& consumer, const std::string& id,
                 const std::string& what);

  // The real clock's now, as a payload the worker measures from.
  static std::string Now();

  std::unique_ptr<Scheduler> producer_;
};

// FanInTest
//
// The fan-in case (fan_in_suite.cc), for the stores that hold jobs that
// wait for others (Backend::Add(), "Dependencies"): a store instantiates it
// when it does.
class FanInTest : public MultiProcessTest {};

// CollectUntil()
//
// Reads what every worker says, taking turns so that none stalls on a full
// pipe, until `done()` holds or `limit` passes; whether `done()` held.
bool CollectUntil(const std::vector<WorkerProcess*>& workers,
                  const std::function<bool()>& done, absl::Duration limit);

// AllSaid()
//
// Whether every worker said `line`, or (no use waiting then) any worker
// failed: said "error ...". A test that waited checks for errors after.
bool AllSaid(const std::vector<WorkerProcess*>& workers,
             const std::string& line);

// Errors()
//
// The "error ..." lines of `worker`, for a test's expectation.
std::vector<std::string> Errors(const WorkerProcess& worker);

// Count()
//
// How many of `worker`'s lines are exactly `line`.
int Count(const WorkerProcess& worker, const std::string& line);

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_MULTIPROCESS_MULTIPROCESS_SUITE_H_
