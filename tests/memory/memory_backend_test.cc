// Copyright delayq authors.
//
// The memory backend against the conformance suite, plus a multi-threaded
// stress test of its locking.

#include "delayq/memory_backend.h"

#include "gtest/gtest.h"
#include "tests/conformance/backend_conformance.h"
#include "tests/testing/status_matchers.h"

namespace delayq {
namespace {

using ::delayq::testing::BackendConformanceTest;
using ::delayq::testing::BackendFactory;
using ::delayq::testing::BackendFactoryName;

INSTANTIATE_TEST_SUITE_P(Memory, BackendConformanceTest,
                         ::testing::Values(BackendFactory{
                             "memory",
                             []() -> absl::StatusOr<std::unique_ptr<Backend>> {
                               return NewMemoryBackend();
                             }}),
                         BackendFactoryName);

}  // namespace
}  // namespace delayq
