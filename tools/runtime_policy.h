// Copyright delayq authors.
//
// KeepFreedHeap() — the allocator policy of delayq's own programs.
//
// glibc gives the free top of a heap back to the kernel as soon as more
// than M_TRIM_THRESHOLD (128 KiB at first) is free there, keeping only
// M_TOP_PAD. SQLite allocates and frees a statement journal and more in
// every write transaction, so a thread that runs one transaction after
// another shrinks its heap and faults the same pages back in each time.
// Measured on `delayq serve` reserving and acking 100 jobs a request on
// SQLite: a quarter of the server's CPU went to that. Keeping 2 MiB at the
// top of each heap took it away (bench/README.md, "HTTP server"). Raising
// the trim threshold instead did too, but 16 clients' batch adds read 20%
// dearer under it, for a reason not found (either setting also fixes
// glibc's mmap threshold). The cost: at most 2 MiB more kept per malloc
// arena. A host that embeds the library can make the same call (the README
// says so). Elsewhere than glibc it does nothing.

#ifndef DELAYQ_TOOLS_MALLOC_POLICY_H_
#define DELAYQ_TOOLS_MALLOC_POLICY_H_

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace delayq {

inline constexpr int kMallocTopPadBytes = 2 << 20;

// Call at the start of main(), before threads start.
inline void KeepFreedHeap() { mallopt(M_TOP_PAD, kMallocTopPadBytes); }

}  // namespace delayq

#endif  // DELAYQ_TOOLS_MALLOC_POLICY_H_
