// Copyright delayq authors.
//
// What the fault-injection tests share: the stores they run on, the seeds
// they run with, and the checks of the guarantees that hold whatever the
// store does wrong (nothing lost, no job run twice at once under a live
// lease).
//
// Seeds: every test runs kSeeds; DELAYQ_FAULT_SEEDS="7,12" runs those
// instead, to replay a failing one. Each test names its seed and prints
// what was injected when it fails.

#ifndef DELAYQ_TESTS_FAULTS_FAULT_HARNESS_H_
#define DELAYQ_TESTS_FAULTS_FAULT_HARNESS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "delayq/delayq.h"
#include "gtest/gtest.h"
#include "tests/testing/faulty_backend.h"

namespace delayq {
namespace testing {

enum class StoreKind { kMemory, kSqlite };

// A store of that kind: memory, or SQLite in a fresh file.
std::unique_ptr<Backend> OpenStore(StoreKind kind);

// A seeded schedule that fails `fail` of the calls before the store acts
// and as many after it acted, and delays `delay` of them by up to
// `max_delay`.
FaultPlan MixedPlan(uint64_t seed, double fail, double delay,
                    absl::Duration max_delay);

// The seeds every randomised test runs (see above).
std::vector<uint64_t> FaultSeeds();

// One case of a parameterised test: a store and a seed.
struct FaultCase {
  StoreKind store;
  uint64_t seed;
};
std::vector<FaultCase> FaultCases();
std::string FaultCaseName(const FaultCase& c);
// FaultCaseName() of a parameterised test's case, for
// INSTANTIATE_TEST_SUITE_P.
std::string FaultCaseTestName(const ::testing::TestParamInfo<FaultCase>& info);
std::ostream& operator<<(std::ostream& out, const FaultCase& c);

inline bool IsInjectable(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s);
}

// Waits (in real time, at most `patience`) until `n` threads wait on the
// clock: the threads of a scheduler have gone quiet until it moves.
bool AwaitWaiters(const SimulatedClock& clock, int n,
                  absl::Duration patience = absl::Seconds(2));

// Scheduler::Stop(grace) while the clock keeps moving (the grace and the
// handlers' work are simulated time), once the threads are quiet. Returns
// how long it took in real time.
absl::Duration StopWhileAdvancing(
    Scheduler& scheduler, SimulatedClock& clock, absl::Duration grace,
    absl::Duration step = absl::Milliseconds(500));

// Handler runs, for the check that no job runs twice at once under a live
// lease. Times are the scheduler's (simulated) clock.
class RunLog {
 public:
  struct Run {
    std::string id;
    uint64_t token = 0;
    absl::Time start;
    absl::Time end = absl::InfiniteFuture();  // still running
  };

  // Handlers call these around their work. Begin() returns the run's index.
  size_t Begin(const Lease& lease, absl::Time now);
  void End(size_t index, absl::Time now);

  std::vector<Run> Runs() const;
  // Jobs with at least one finished run.
  std::set<std::string> Finished() const;
  int Running() const;
  // Runs that began at or after `t`.
  int BeganSince(absl::Time t) const;

 private:
  mutable absl::Mutex mu_;
  std::vector<Run> runs_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
};

// Problems with overlapping runs of one job: two runs that overlap in time
// share a lease, or the lease granted first did not end in the store (a
// redelivery after a lease lapsed at its deadline, or after it was
// released, is allowed; a lapse decided before the deadline the store had
// given with a Touch is no end). Empty when there are none. `leases` is the
// store's ledger (FaultyBackend::Leases()).
std::vector<std::string> LiveLeaseOverlaps(
    const std::vector<RunLog::Run>& runs,
    const std::map<FaultyBackend::LeaseKey, GrantedLease>& leases);

// Problems with the ledger once every job should be done: a job the store
// added that it neither acked nor cancelled. Empty when there are none.
std::vector<std::string> LostJobs(const FaultyBackend& faulty);

// Jobs that left the store by an Ack nobody asked for, or a Cancel: ids
// in the ledger's Acked() not in `asked_to_ack`, in Cancelled() not in
// `asked_to_cancel`. Empty when there are none.
std::vector<std::string> UnaskedEnds(
    const FaultyBackend& faulty, const std::set<std::string>& asked_to_ack,
    const std::set<std::string>& asked_to_cancel);

// What a store may still show as reserved once Stop() returned: a job
// whose newest lease
//   * lapsed already (its deadline, as the store last set it, is at or
//     before `now`: a renewal failed and the worker dropped it), or
//   * was never handed to anyone (the Reserve() reply was lost), or
//   * was extended by a Touch() whose reply was lost (the keeper took the
//     lease for lapsed and its worker let the job go), or
//   * had its ending call (Ack, AckBatch, Fail, Release) fail before it
//     reached the store, on the last try.
// Since no Touch() follows Stop(), such a lease lapses by its deadline and
// the job is delivered again. Returns the reserved jobs that fit none of
// these: leases kept past Stop(). Empty when there are none.
std::vector<std::string> LeasesKeptAfterStop(
    Backend& store, const FaultyBackend& faulty,
    const std::vector<std::string>& topics, absl::Time now);

// Counts of `topic`'s jobs in the store, summed.
int64_t JobsIn(Backend& store, const std::vector<std::string>& topics);

}  // namespace testing
}  // namespace delayq

#endif  // DELAYQ_TESTS_FAULTS_FAULT_HARNESS_H_
