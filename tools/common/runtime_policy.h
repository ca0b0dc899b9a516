// Copyright delayq authors.
//
// SetRuntimePolicy() — the process-wide settings of delayq's own programs
// (and of the benchmarks that measure the library beside them). A host that
// embeds the library can make the same call; the README says so.
//
// No mutex deadlock detection: an Abseil built without NDEBUG, as Debian's
// is, checks every absl::Mutex acquisition against a global graph of lock
// orders, a debugging aid that Abseil's release builds leave off. On
// `delayq serve` with 100 jobs a request on Redis, it cost 10-25% of the
// server's CPU (bench/README.md, "HTTP server"). The checks find lock-order
// inversions in tests, which still run with them (only the programs turn
// them off), and ThreadSanitizer finds the rest.

#ifndef DELAYQ_TOOLS_COMMON_RUNTIME_POLICY_H_
#define DELAYQ_TOOLS_COMMON_RUNTIME_POLICY_H_

#include "absl/synchronization/mutex.h"

namespace delayq {

// Call at the start of main(), before threads start.
inline void SetRuntimePolicy() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace delayq

#endif  // DELAYQ_TOOLS_COMMON_RUNTIME_POLICY_H_
