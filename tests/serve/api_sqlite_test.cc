// Copyright delayq authors.
//
// The HTTP API suite on SQLite, each test on a fresh file.

#include "tests/serve/api_suite.h"
#include "tests/testing/temp_path.h"

namespace delayq {
namespace testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Sqlite, ApiTest,
                         ::testing::Values(StoreUrlFactory{
                             "sqlite",
                             [] { return "sqlite:" + FreshDbPath("serve"); }}),
                         StoreUrlFactoryName);

}  // namespace
}  // namespace testing
}  // namespace delayq
