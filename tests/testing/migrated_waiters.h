// Copyright delayq authors.
//
// The waiting jobs of a store migrated to keeping each job's dependency
// list for its life (SQLite schema 17, PostgreSQL schema 6): the steps
// both stores' migration tests share. Before the migration a store knew
// only the dependencies still pending, so a migrated waiting job lists
// those (in id order), and its lease hands on their results.

#ifndef DELAYQ_TESTS_TESTING_MIGRATED_WAITERS_H_
#define DELAYQ_TESTS_TESTING_MIGRATED_WAITERS_H_

#include "absl/time/time.h"
#include "delayq/backend.h"

namespace delayq {
namespace testing {

// Fills `backend` at `now`: jobs "met", "b" and "a" of topic "t", kept
// done once acked, and "w" of topic "parent" waiting for all three; "met"
// is then acked with result "m". Call it before taking the store back to
// the version before the lists.
void AddWaitersBeforeTheLists(Backend& backend, absl::Time now);

// Checks the migrated store at `now`: "w" waits, listing "a" and "b"; once
// "a" and "b" are acked, its lease carries their results; a job added
// since keeps its whole list, in order. Leaves no job waiting and none
// with a list. Wrap in ASSERT_NO_FATAL_FAILURE.
void ExpectMigratedWaiters(Backend& backend, absl::Time now);

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_TESTING_MIGRATED_WAITERS_H_
