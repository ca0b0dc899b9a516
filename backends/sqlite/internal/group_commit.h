// Copyright delayq authors.
//
// group_commit.h — the SQLite store's group commit (src/common/group_commit.h:
// the writes of several threads of one process in one write transaction)
// and its test seams.

#ifndef DELAYQ_BACKENDS_SQLITE_INTERNAL_GROUP_COMMIT_H_
#define DELAYQ_BACKENDS_SQLITE_INTERNAL_GROUP_COMMIT_H_

#include "src/common/group_commit.h"

namespace delayq {

class Backend;

namespace sqlite_internal {

using GroupCommit = internal::GroupCommit;

// Test seams of a SQLite store (`backend` must be one; defined in
// sqlite_backend.cc): the state of its group commit, and a hook that SQLite
// calls at each COMMIT, which turns the COMMIT into a ROLLBACK when it
// returns non-zero (sqlite3_commit_hook(); null removes it).
GroupCommit::State GroupCommitStateForTest(Backend* backend);
void SetCommitHookForTest(Backend* backend, int (*hook)(void*), void* arg);

}  // namespace sqlite_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_SQLITE_INTERNAL_GROUP_COMMIT_H_
