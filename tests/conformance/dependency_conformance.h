// Copyright delayq authors.
//
// dependency_conformance.h — the conformance suite of jobs that wait for
// others (JobOptions::after, "Dependencies" at Backend::Add()).
//
// Apart from BackendConformanceTest because not every store holds
// dependencies yet. A store that does instantiates DependencyConformanceTest
// (target :dependency_conformance); one that does not instantiates
// DependencyRefusalTest (target :dependency_refusal_conformance), which
// checks that it refuses them with Unimplemented and stores nothing, never
// ignores them. Dependencies are given ids that share the hash tag "{f}",
// as a sharded or clustered store requires of a job and its dependencies.

#ifndef DELAYQ_TESTS_CONFORMANCE_DEPENDENCY_CONFORMANCE_H_
#define DELAYQ_TESTS_CONFORMANCE_DEPENDENCY_CONFORMANCE_H_

#include "tests/conformance/backend_conformance.h"

namespace delayq {
namespace testing {

class DependencyConformanceTest : public BackendConformanceTest {};

class DependencyRefusalTest : public BackendConformanceTest {};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_CONFORMANCE_DEPENDENCY_CONFORMANCE_H_
