// Copyright delayq authors.
//
// The Redis backend against the conformance suite: one server per test
// binary, a fresh namespace per test.

#include "delayq/redis_backend.h"
#include "gtest/gtest.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/conformance/batch_conformance.h"
#include "tests/conformance/dependency_conformance.h"
#include "tests/redis/redis_test_server.h"

namespace delayq {
namespace {

using ::delayq::testing::BackendConformanceTest;
using ::delayq::testing::BackendFactory;
using ::delayq::testing::BackendFactoryName;
using ::delayq::testing::BatchConformanceTest;
using ::delayq::testing::DependencyConformanceTest;
using ::delayq::testing::DependencyResultsTest;

const BackendFactory kRedis{
    "redis", []() -> absl::StatusOr<std::unique_ptr<Backend>> {
      return OpenRedisBackend(testing::FreshRedisOptions());
    }};

INSTANTIATE_TEST_SUITE_P(Redis, BackendConformanceTest,
                         ::testing::Values(kRedis), BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(Redis, DependencyConformanceTest,
                         ::testing::Values(kRedis), BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(Redis, DependencyResultsTest,
                         ::testing::Values(kRedis), BackendFactoryName);
INSTANTIATE_TEST_SUITE_P(Redis, BatchConformanceTest, ::testing::Values(kRedis),
                         BackendFactoryName);

// The bound of the event log. Redis trims a stream by whole nodes (of at
// most 100 entries unless configured otherwise): a few more may stay.
TEST(RedisEventLogTest, KeepsTheNewestEventsWithinItsBound) {
  RedisOptions options = testing::FreshRedisOptions();
  options.events.max_events = 50;
  absl::StatusOr<std::unique_ptr<Backend>> backend = OpenRedisBackend(options);
  ASSERT_TRUE(backend.ok()) << backend.status();
  testing::CheckEventLogBound(**backend, 50, /*slack=*/200);
}

}  // namespace
}  // namespace delayq
