// Copyright delayq authors.
//
// group_commit.h — the writes of several threads of one process in one
// SQLite write transaction.
//
// Why: every write of the SQLite store is a transaction (BEGIN IMMEDIATE,
// the statements, the counts row, COMMIT), and the threads of one process
// share one connection behind one mutex. So eight threads that each reserve
// and ack one job at a time run no faster than one: they take turns, and
// each turn pays the whole transaction. With group commit, the callers that
// arrive while a transaction runs queue up, and the next transaction runs
// all of them: one BEGIN, one counts row per topic, one COMMIT, one round of
// news for the group.
//
// A caller that finds no transaction running becomes the leader at once
// and runs the group it finds (itself alone, on an idle store), on its own
// thread. A caller that finds one running waits. When a group ends, its
// leader runs the callers queued meanwhile as the next group itself, up to
// kGroupsPerLead groups; then the first caller in the queue leads. Each
// caller is woken only when its own operation is done (or when it is to
// lead).
//
// Why the leader goes on, and why a waiter spins before it sleeps: on a
// virtual machine a sleeping thread takes tens of microseconds to run
// again once woken (its core is halted), as long as a whole operation.
// Every hand-over of the lead to a sleeping caller left the store idle
// that long. A waiter polls its word for up to kSpin, yielding the core
// between polls so that it takes no time from threads with work, and only
// then sleeps on its futex word (waking it is one system call; it takes
// no lock on waking). The leader's own caller waits for at most
// kGroupsPerLead groups.
//
// A group waits to fill in one case only: the callers of the group before
// were just woken, and a busy caller comes straight back with its next
// operation. Every transaction costs much the same whatever it holds (its
// pages written to the WAL, its locks), so the leader waits for as many
// callers as that group had, at most kGather; the callers that came are
// the next leader's target. A group of two gains too little to wait for:
// the leader waits only when the group before had kGatherFrom callers or
// more. A lone caller never waits.
//
// GroupCommit knows nothing of SQLite: the Runner it is given runs a group
// (see SqliteBackend::CommitGroup() for the transaction, the savepoint per
// operation and the news). Processes each group their own callers; SQLite's
// file lock still serialises the processes' transactions.

#ifndef DELAYQ_BACKENDS_SQLITE_INTERNAL_GROUP_COMMIT_H_
#define DELAYQ_BACKENDS_SQLITE_INTERNAL_GROUP_COMMIT_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "src/common/mutex.h"

namespace delayq {

class Backend;

namespace sqlite_internal {

class GroupCommit {
 public:
  // The longest a leader waits for the callers of the group before.
  static constexpr std::chrono::microseconds kGather{200};
  // The fewest callers of the group before that a leader waits for.
  static constexpr size_t kGatherFrom = 3;
  // The most groups one caller leads before it hands the lead on.
  static constexpr int kGroupsPerLead = 4;
  // How long a waiter polls before it sleeps.
  static constexpr std::chrono::microseconds kSpin{100};

  // One caller's operation. The Runner sets `result`.
  struct Op {
    explicit Op(absl::FunctionRef<absl::Status()> b) : body(b) {}
    absl::FunctionRef<absl::Status()> body;
    absl::Status result;
  };

  // Runs a group: calls every op's body, in order, in one transaction, and
  // sets every op's result. Called on the leader's thread without
  // GroupCommit's lock, for one group at a time.
  using Runner = std::function<void(absl::Span<Op* const> group)>;

  // `gather`: the longest a leader waits for the callers of the group
  // before (tests choose theirs).
  explicit GroupCommit(Runner run, std::chrono::microseconds gather = kGather)
      : run_(std::move(run)), gather_(gather) {}
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Run()
  //
  // Runs `body` in the next group and returns the result the Runner gave
  // it. Returns once the group that held it has ended.
  absl::Status Run(absl::FunctionRef<absl::Status()> body)
      ABSL_LOCKS_EXCLUDED(mu_);

  // RunAll()
  //
  // Runs `ops` in the next group, one after the other in this order, each
  // an operation of its own (the Runner sets each one's result), for a
  // caller with several things to do at once. Returns once the group that
  // held them has ended.
  void RunAll(absl::Span<Op> ops) ABSL_LOCKS_EXCLUDED(mu_);

  // What tests look at: whether a group runs, the callers waiting for the
  // next, and the groups and operations (each op of RunAll() counts) run so
  // far.
  struct State {
    bool leading = false;
    // A leader waits for the callers of the group before.
    bool gathering = false;
    size_t queued = 0;
    int64_t groups = 0;
    int64_t ops = 0;
  };
  State StateForTest() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // What a waiting caller is told; kWaiting and kAsleep until it is (the
  // latter once it sleeps on the word, so that Tell() knows to wake it).
  enum Told : uint32_t { kWaiting = 0, kDone = 1, kLead = 2, kAsleep = 3 };

  // A caller waiting in the queue, on its own stack.
  struct Waiter {
    explicit Waiter(absl::Span<Op> o) : ops(o) {}
    absl::Span<Op> ops;
    // A futex word: kWaiting (or kAsleep) until the caller is told.
    std::atomic<uint32_t> told{kWaiting};
  };

  // Waits, at most gather_, until last_callers_ callers are queued.
  void Gather() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the queue as the group and runs it, and again while callers
  // queued meanwhile, up to kGroupsPerLead groups; then hands the lead to
  // the first caller queued, if any. Wakes each group's callers as it ends.
  // REQUIRES: `self` leads (leading_ was set for it).
  void Lead(Waiter* self) ABSL_LOCKS_EXCLUDED(mu_);
  // Runs the queue as one group; returns its callers.
  std::vector<Waiter*> RunQueued(bool gather) ABSL_LOCKS_EXCLUDED(mu_);
  // Tells `w` `what` and wakes it: the last touch of `w`, which may go
  // away as soon as it sees `what`.
  static void Tell(Waiter* w, Told what);
  // Polls, then sleeps, until `w` is told, and returns what.
  static Told AwaitTold(Waiter* w);

  const Runner run_;
  const std::chrono::microseconds gather_;
  internal::Mutex mu_;
  std::vector<Waiter*> queue_ ABSL_GUARDED_BY(mu_);
  // Whether a group is running or its next leader has been told to lead;
  // when not, the queue is empty.
  bool leading_ ABSL_GUARDED_BY(mu_) = false;
  // The callers of the last group, and whether a leader waits for them.
  size_t last_callers_ ABSL_GUARDED_BY(mu_) = 1;
  bool gathering_ ABSL_GUARDED_BY(mu_) = false;
  internal::CondVar gathered_;
  int64_t groups_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t ops_ ABSL_GUARDED_BY(mu_) = 0;
};

// Test seams of a SQLite store (`backend` must be one; defined in
// sqlite_backend.cc): the state of its group commit, and a hook that SQLite
// calls at each COMMIT, which turns the COMMIT into a ROLLBACK when it
// returns non-zero (sqlite3_commit_hook(); null removes it).
GroupCommit::State GroupCommitStateForTest(Backend* backend);
void SetCommitHookForTest(Backend* backend, int (*hook)(void*), void* arg);

}  // namespace sqlite_internal
}  // namespace delayq

#endif  // DELAYQ_BACKENDS_SQLITE_INTERNAL_GROUP_COMMIT_H_
