// Copyright delayq authors.
//
// The Redis backend against the conformance suite: one server per test
// binary, a fresh namespace per test.

#include "delayq/redis_backend.h"
#include "gtest/gtest.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/redis/redis_test_server.h"

namespace delayq {
namespace {

using ::delayq::testing::BackendConformanceTest;
using ::delayq::testing::BackendFactory;
using ::delayq::testing::BackendFactoryName;

INSTANTIATE_TEST_SUITE_P(Redis, BackendConformanceTest,
                         ::testing::Values(BackendFactory{
                             "redis",
                             []() -> absl::StatusOr<std::unique_ptr<Backend>> {
                               return OpenRedisBackend(
                                   testing::FreshRedisOptions());
                             }}),
                         BackendFactoryName);

}  // namespace
}  // namespace delayq
