// Copyright delayq authors.
//
// SetRuntimePolicy() — the process-wide settings of delayq's own programs
// (and of the benchmarks that measure the library beside them). A host that
// embeds the library can make the same calls; the README says so.
//
// Keep freed heap (glibc): glibc gives the free top of a heap back to the
// kernel as soon as more than M_TRIM_THRESHOLD (128 KiB at first) is free
// there, keeping only M_TOP_PAD. SQLite allocates and frees a statement
// journal and more in every write transaction, so a thread that runs one
// transaction after another shrinks its heap and faults the same pages back
// in each time. Measured on `delayq serve` reserving and acking 100 jobs a
// request on SQLite: a quarter of the server's CPU went to that. Keeping
// 2 MiB at the top of each heap took it away (bench/README.md, "HTTP
// server"). Raising the trim threshold instead did too, but 16 clients'
// batch adds read 20% dearer under it, for a reason not found (either
// setting also fixes glibc's mmap threshold). The cost: at most 2 MiB more
// kept per malloc arena. Elsewhere than glibc it does nothing.
//
// No mutex deadlock detection: an Abseil built without NDEBUG, as Debian's
// is, checks every absl::Mutex acquisition against a global graph of lock
// orders, a debugging aid that Abseil's release builds leave off. On
// `delayq serve` with 100 jobs a request on Redis, it cost 10-25% of the
// server's CPU (bench/README.md, "HTTP server"). The checks find lock-order
// inversions in tests, which still run with them (only the programs turn
// them off), and ThreadSanitizer finds the rest.

#ifndef DELAYQ_TOOLS_RUNTIME_POLICY_H_
#define DELAYQ_TOOLS_RUNTIME_POLICY_H_

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "absl/synchronization/mutex.h"

namespace delayq {

inline constexpr int kMallocTopPadBytes = 2 << 20;

// Call at the start of main(), before threads start.
inline void SetRuntimePolicy() {
#ifdef __GLIBC__
  mallopt(M_TOP_PAD, kMallocTopPadBytes);
#endif
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace delayq

#endif  // DELAYQ_TOOLS_RUNTIME_POLICY_H_
