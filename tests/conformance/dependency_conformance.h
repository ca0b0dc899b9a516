// Copyright delayq authors.
//
// dependency_conformance.h — the conformance suite of jobs that wait for
// others (JobOptions::after, "Dependencies" at Backend::Add()).
//
// Apart from BackendConformanceTest so that a store outside this tree that
// does not hold dependencies can run the rest (it must refuse them with
// Unimplemented, backend.h). Every store here instantiates
// DependencyConformanceTest (target :dependency_conformance). Jobs are
// given ids that share the hash tag "{f}", as a sharded Redis namespace
// requires of a job and the jobs it waits for.

#ifndef DELAYQ_TESTS_CONFORMANCE_DEPENDENCY_CONFORMANCE_H_
#define DELAYQ_TESTS_CONFORMANCE_DEPENDENCY_CONFORMANCE_H_

#include "tests/conformance/backend_conformance.h"

namespace delayq {
namespace testing {

class DependencyConformanceTest : public BackendConformanceTest {};

// The results a job's dependencies hand on to its leases
// (Lease::dependency_results). Apart from DependencyConformanceTest for the
// same reason: a store outside this tree may hold dependencies without
// handing results on. Every store here instantiates it too.
class DependencyResultsTest : public BackendConformanceTest {};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_CONFORMANCE_DEPENDENCY_CONFORMANCE_H_
