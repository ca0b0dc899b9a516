// Copyright delayq authors.
//
// The HTTP API suite on Redis: one redis-server for the binary, a fresh
// namespace for each test.

#include "tests/redis/redis_test_server.h"
#include "tests/serve/api_suite.h"

namespace delayq {
namespace testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Redis, ApiTest,
                         ::testing::Values(StoreUrlFactory{"redis",
                                                           FreshRedisUrl}),
                         StoreUrlFactoryName);

}  // namespace
}  // namespace testing
}  // namespace delayq
