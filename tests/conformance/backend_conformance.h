// Copyright delayq authors.
//
// backend_conformance.h — the conformance suite every delayq::Backend passes.
//
// The suite checks a store against the contract in delayq/backend.h. A
// backend's test instantiates it with a factory that makes a fresh, empty
// store for every test:
//
//   INSTANTIATE_TEST_SUITE_P(
//       Memory, BackendConformanceTest,
//       ::testing::Values(BackendFactory{
//           "memory",
//           []() -> absl::StatusOr<std::unique_ptr<delayq::Backend>> {
//             return delayq::NewMemoryBackend();
//           }}),
//       BackendFactoryName);
//
// Tests that expect an order among several jobs (the ready order, the
// order of deaths, promotion earliest first) give them ids that share the
// hash tag "{o}": a store that spreads a topic's jobs by id keeps the order
// only among jobs whose ids share a tag (a sharded Redis namespace, see
// delayq/redis_backend.h), and to every other store the braces are just
// characters.
//
// Every test passes `now` explicitly (kT0 plus offsets) and never reads a
// clock, so results do not depend on the machine. Times are whole
// milliseconds: the contract guarantees millisecond precision, and a store
// may truncate below that.

#ifndef DELAYQ_TESTS_CONFORMANCE_BACKEND_CONFORMANCE_H_
#define DELAYQ_TESTS_CONFORMANCE_BACKEND_CONFORMANCE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "delayq/backend.h"
#include "gtest/gtest.h"

namespace delayq {
namespace testing {

// BackendFactory
//
// Names a backend and makes a fresh, EMPTY store on every call.
// The reference-model test's steps on a store checked at full length.
inline constexpr int kFullModelSteps = 3000;

struct BackendFactory {
  std::string name;  // "memory", "sqlite", "redis": used in test names
  std::function<absl::StatusOr<std::unique_ptr<Backend>>()> make;
  // The limit a store enforces on the jobs of a topic whose ids share a
  // "{tag}", for a topic limited to `limit`: the limit itself, except on a
  // store that keeps a topic in several parts and gives each part a share
  // (a sharded Redis namespace). The limit tests expect that share.
  std::function<TopicLimit(const TopicLimit&)> limit_share = nullptr;
  // The steps of the reference-model test. A store that runs the same code
  // as one checked at full length, reached another way (over TLS, through
  // Sentinel or Cluster), takes fewer: each step reads the whole store
  // back, which is what costs there.
  int model_steps = kFullModelSteps;
};

// Test output names the factory rather than dumping its bytes.
inline void PrintTo(const BackendFactory& factory, std::ostream* os) {
  *os << factory.name;
}

// BackendFactoryName()
//
// The factory's name, for INSTANTIATE_TEST_SUITE_P's name generator.
std::string BackendFactoryName(
    const ::testing::TestParamInfo<BackendFactory>& info);

// The fixed time every test starts at.
inline const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// kT0 + `offset`.
inline absl::Time At(absl::Duration offset) { return kT0 + offset; }

// CheckEventLogBound()
//
// For a store opened with EventLogOptions::max_events = `max_events`:
// appends 20 times as many events of one job and checks that the newest
// stay, in order, at least max_events and at most `slack` more of them (a
// store may trim approximately: Redis trims whole stream nodes).
void CheckEventLogBound(Backend& backend, int64_t max_events, int64_t slack);

// BackendConformanceTest
//
// The fixture: `backend_` is a fresh store from the parameter's factory.
class BackendConformanceTest : public ::testing::TestWithParam<BackendFactory> {
 protected:
  void SetUp() override;

  // A topic name unique to the running test: "<test>.<suffix>".
  std::string Topic(absl::string_view suffix = "q") const;

  // A job with the given id, topic and run_at and distinctive defaults.
  static NewJob MakeJob(absl::string_view id, absl::string_view topic,
                        absl::Time run_at = kT0);

  // Adds one job at `now`, failing the test on error.
  void AddOne(const NewJob& job, absl::Time now = kT0);

  // Adds `job` at its run_at and reserves it at `now` (the only job of its
  // topic that is due then), failing the test if that does not work.
  Lease AddAndReserve(const NewJob& job, absl::Time now);

  // Expects Ack, Fail, Release and Touch of `id` under `token` to fail with
  // FailedPrecondition and to leave the job (if any) as it was.
  void ExpectStale(const std::string& id, uint64_t token, absl::Time now);

  // The limit the store enforces for `limit` (BackendFactory::limit_share).
  TopicLimit Share(const TopicLimit& limit) const;

  // The ids of `leases`, or of `jobs`, in order.
  static std::vector<std::string> Ids(const std::vector<Lease>& leases);
  static std::vector<std::string> Ids(const std::vector<Job>& jobs);

  std::unique_ptr<Backend> backend_;
};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_CONFORMANCE_BACKEND_CONFORMANCE_H_
