// Copyright delayq authors.
//
// batch_conformance.h — the conformance suite of batches (delayq/batch.h,
// "Batches" at Backend::OpenBatch()).
//
// Apart from BackendConformanceTest because a store need not keep batches
// (Backend's defaults refuse them); every store of delayq does, and
// instantiates BatchConformanceTest (target :batch_conformance). Ids share
// the hash tag "{b}", as a sharded store requires of a batch and its jobs.

#ifndef DELAYQ_TESTS_CONFORMANCE_BATCH_CONFORMANCE_H_
#define DELAYQ_TESTS_CONFORMANCE_BATCH_CONFORMANCE_H_

#include "tests/conformance/backend_conformance.h"

namespace delayq {
namespace testing {

class BatchConformanceTest : public BackendConformanceTest {};

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_CONFORMANCE_BATCH_CONFORMANCE_H_
