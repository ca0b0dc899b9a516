// Copyright delayq authors.
//
// batch_conformance.h — the conformance suite of batches (delayq/batch.h,
// "Batches" at Backend::OpenBatch()).
//
// Apart from BackendConformanceTest because not every store keeps batches.
// A store that does instantiates BatchConformanceTest (target
// :batch_conformance); one that does not instantiates BatchRefusalTest
// (target :batch_refusal_conformance), which checks that it refuses them
// with Unimplemented naming the store and stores nothing. Ids share the
// hash tag "{b}", as a sharded or clustered store would require of a batch
// and its jobs.

#ifndef DELAYQ_TESTS_CONFORMANCE_BATCH_CONFORMANCE_H_
#define DELAYQ_TESTS_CONFORMANCE_BATCH_CONFORMANCE_H_

#include "tests/conformance/backend_conformance.h"

namespace delayq {
namespace testing {

class BatchConformanceTest : public BackendConformanceTest {};

class BatchRefusalTest : public BackendConformanceTest {};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_CONFORMANCE_BATCH_CONFORMANCE_H_
